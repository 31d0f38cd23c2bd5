//===- MPIMemoryEffects.cpp - Effects of blocking mpi ops -------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//
//
// MLIR 22's mpi ops other than the communicator queries declare no memory
// effects, and upstream's ownership-based deallocation (kvcache-bufferize's
// `dealloc`, on by default) rejects every op of unknown effects: a program
// that convert-shard-to-mpi gave an MPI_Allreduce could only be lowered with
// dealloc=false. These models give the blocking ops the effects they have:
// a send reads its buffer, a receive writes it, an all-reduce reads one and
// writes the other, all of them when they return; init, finalize and
// barrier touch MPI's own state only, retval_check and error_class nothing.
// The non-blocking isend and irecv get none on purpose: their buffers stay
// in use until the mpi.wait, which the deallocation could not know, so it
// keeps rejecting them.
//
//===----------------------------------------------------------------------===//

#include "KVCache/InitAll.h"

#include "mlir/Dialect/MPI/IR/MPI.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace {
using EffectList =
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>;

/// The effects of `OpT`: its buffers read or written, and a write to MPI's
/// state (the default resource) by every op that communicates, so that none
/// is moved or erased as if pure; `retval_check` and `error_class` only
/// look at a return value.
template <typename OpT>
struct MPIEffects
    : MemoryEffectOpInterface::ExternalModel<MPIEffects<OpT>, OpT> {
  void getEffects(Operation *op, EffectList &effects) const {
    auto mpiOp = cast<OpT>(op);
    if constexpr (std::is_same_v<OpT, mpi::SendOp>) {
      effects.emplace_back(MemoryEffects::Read::get(), &mpiOp.getRefMutable());
    } else if constexpr (std::is_same_v<OpT, mpi::RecvOp>) {
      effects.emplace_back(MemoryEffects::Write::get(),
                           &mpiOp.getRefMutable());
    } else if constexpr (std::is_same_v<OpT, mpi::AllReduceOp>) {
      effects.emplace_back(MemoryEffects::Read::get(),
                           &mpiOp.getSendbufMutable());
      effects.emplace_back(MemoryEffects::Write::get(),
                           &mpiOp.getRecvbufMutable());
    }
    if constexpr (!std::is_same_v<OpT, mpi::RetvalCheckOp> &&
                  !std::is_same_v<OpT, mpi::ErrorClassOp>)
      effects.emplace_back(MemoryEffects::Write::get(),
                           SideEffects::DefaultResource::get());
  }
};
} // namespace

void mlir::kvcache::registerMPIMemoryEffects(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, mpi::MPIDialect *) {
    mpi::SendOp::attachInterface<MPIEffects<mpi::SendOp>>(*context);
    mpi::RecvOp::attachInterface<MPIEffects<mpi::RecvOp>>(*context);
    mpi::AllReduceOp::attachInterface<MPIEffects<mpi::AllReduceOp>>(*context);
    mpi::InitOp::attachInterface<MPIEffects<mpi::InitOp>>(*context);
    mpi::FinalizeOp::attachInterface<MPIEffects<mpi::FinalizeOp>>(*context);
    mpi::Barrier::attachInterface<MPIEffects<mpi::Barrier>>(*context);
    mpi::RetvalCheckOp::attachInterface<MPIEffects<mpi::RetvalCheckOp>>(
        *context);
    mpi::ErrorClassOp::attachInterface<MPIEffects<mpi::ErrorClassOp>>(
        *context);
  });
}
