# Precompiled MLIR headers for our C++ targets (KVCACHE_ENABLE_PCH).
#
# Nearly all of a translation unit's compile time here is clang parsing
# and instantiating the MLIR and LLVM headers (-ftime-trace: ~95% frontend);
# the same few dialect headers are included by most files. Precompiled once
# per build, they make each of those files several times cheaper to
# compile, which both builds of scripts/test.sh (build/ and build-asan/)
# gain from. Only upstream headers are precompiled: ours use the
# GEN_PASS_DEF_* pattern, which a header included ahead of a file would
# break. KVCACHE_ENABLE_PCH=OFF builds without them (to check that each
# file includes what it uses).

set(KVCACHE_PCH_HEADERS
  <mlir/Dialect/Arith/IR/Arith.h>
  <mlir/Dialect/Func/IR/FuncOps.h>
  <mlir/Dialect/GPU/IR/GPUDialect.h>
  <mlir/Dialect/LLVMIR/LLVMDialect.h>
  <mlir/Dialect/LLVMIR/NVVMDialect.h>
  <mlir/Dialect/Math/IR/Math.h>
  <mlir/Dialect/MemRef/IR/MemRef.h>
  <mlir/Dialect/SCF/IR/SCF.h>
  <mlir/Dialect/Vector/IR/VectorOps.h>
  <mlir/IR/BuiltinOps.h>
  <mlir/IR/PatternMatch.h>
  <mlir/Pass/Pass.h>
  <mlir/Transforms/DialectConversion.h>
  )

# Gives the targets in ARGN the precompiled headers. They must compile with
# the same flags and definitions: the first target builds the headers, the
# others reuse them (one precompilation for all).
function(kvcache_precompile_headers first)
  if(NOT KVCACHE_ENABLE_PCH)
    return()
  endif()
  target_precompile_headers(${first} PRIVATE ${KVCACHE_PCH_HEADERS})
  foreach(target IN LISTS ARGN)
    target_precompile_headers(${target} REUSE_FROM ${first})
  endforeach()
endfunction()
