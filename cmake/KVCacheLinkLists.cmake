# The MLIR libraries each of our libraries links, recorded for the
# dependency rule (docs/Design.md, "Dependencies"; test/Lint/
# dependency-rule.test). Under MLIR_LINK_MLIR_DYLIB, mlir_target_link_libraries
# links libMLIR.so instead of the components it is given, so the build
# itself no longer says which dialects a library asked for: this records
# them.

# kvcache_mlir_target_link_libraries(<target> <PUBLIC|PRIVATE|INTERFACE>
#                                    <MLIR library>...)
# mlir_target_link_libraries, the libraries also appended to the target
# property KVCACHE_MLIR_LINKS.
function(kvcache_mlir_target_link_libraries target scope)
  set_property(TARGET ${target} APPEND PROPERTY KVCACHE_MLIR_LINKS ${ARGN})
  mlir_target_link_libraries(${target} ${scope} ${ARGN})
endfunction()

# kvcache_write_mlir_link_lists(<directory> <target>...)
# Writes <directory>/<target>.txt for each target at generate time: the line
# "<target> links:", then, one a line and sorted, the MLIR libraries that the
# target and the kvcache libraries it links (MLIRKVCache*, transitively) ask
# for, then "end". A kvcache library on the way that did not record its MLIR
# libraries (it called mlir_target_link_libraries directly) is written as
# "UNRECORDED <library>".
function(kvcache_write_mlir_link_lists directory)
  foreach(target ${ARGN})
    set(links)
    set(pending ${target})
    set(seen)
    while(pending)
      list(POP_FRONT pending current)
      if(current IN_LIST seen)
        continue()
      endif()
      list(APPEND seen ${current})
      get_target_property(own ${current} KVCACHE_MLIR_LINKS)
      if(own)
        list(APPEND links ${own})
      else()
        list(APPEND links "UNRECORDED ${current}")
      endif()
      get_target_property(dependencies ${current} LINK_LIBRARIES)
      foreach(dependency ${dependencies})
        if(TARGET ${dependency} AND dependency MATCHES "^MLIRKVCache")
          list(APPEND pending ${dependency})
        endif()
      endforeach()
    endwhile()
    list(REMOVE_DUPLICATES links)
    list(SORT links)
    list(JOIN links "\n" text)
    file(GENERATE OUTPUT ${directory}/${target}.txt
      CONTENT "${target} links:\n${text}\nend\n")
  endforeach()
endfunction()
