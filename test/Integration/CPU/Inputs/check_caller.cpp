//===- check_caller.cpp - a C++ caller of a check routine -----------------===//
//
// Part of the kvcache-mlir project.
//
// argument-checks-c-caller.test: calls the check routine of
// Inputs/check-caller.mlir's @store through its C interface before @store,
// as docs/KernelABI.md shows: a bad call is reported and not made (the
// cache stays as it was), a valid one is made.
//
//===----------------------------------------------------------------------===//

#include "mlir/ExecutionEngine/CRunnerUtils.h"

#include <cstdint>
#include <cstdio>

extern "C" int32_t _mlir_ciface_kvcache_check_store(
    StridedMemRefType<float, 6> *blocks,
    StridedMemRefType<int32_t, 1> *cache_lengths,
    StridedMemRefType<int32_t, 2> *lookup_table, int32_t max_seq_length,
    int32_t max_cache_length, int64_t layer,
    StridedMemRefType<float, 3> *new_rows,
    StridedMemRefType<int32_t, 1> *row_offsets,
    StridedMemRefType<int8_t, 1> *message);

extern "C" void _mlir_ciface_store(StridedMemRefType<float, 6> *blocks,
                                   StridedMemRefType<int32_t, 1> *cache_lengths,
                                   StridedMemRefType<int32_t, 2> *lookup_table,
                                   int32_t max_seq_length,
                                   int32_t max_cache_length, int64_t layer,
                                   StridedMemRefType<float, 3> *new_rows,
                                   StridedMemRefType<int32_t, 1> *row_offsets);

namespace {

// 4 pages of 4 tokens, 2 layers, one head of 4: [4, 2, 2, 4, 1, 4].
float storage[4 * 2 * 2 * 4 * 1 * 4];
int32_t lengths[2] = {3, 1};
int32_t table[2 * 2] = {0, 1, 2, 3};
float rows[3 * 4] = {1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3};
int32_t offsets[3] = {0, 2, 3};

template <typename T, int N>
StridedMemRefType<T, N> contiguous(T *data, const int64_t (&sizes)[N]) {
  StridedMemRefType<T, N> ref;
  ref.basePtr = ref.data = data;
  ref.offset = 0;
  int64_t stride = 1;
  for (int i = N - 1; i >= 0; --i) {
    ref.sizes[i] = sizes[i];
    ref.strides[i] = stride;
    stride *= sizes[i];
  }
  return ref;
}

float sum() {
  float total = 0;
  for (float x : storage)
    total += x;
  return total;
}

/// Checks, then stores `n` rows with `cache_lengths[0] = length0`.
void call(int64_t n, int32_t length0) {
  lengths[0] = length0;
  auto blocks = contiguous(storage, {4, 2, 2, 4, 1, 4});
  auto cacheLengths = contiguous(lengths, {2});
  auto lookupTable = contiguous(table, {2, 2});
  auto newRows = contiguous(rows, {n, 1, 4});
  auto rowOffsets = contiguous(offsets, {3});
  char text[1024];
  auto message = contiguous(reinterpret_cast<int8_t *>(text), {1024});
  if (_mlir_ciface_kvcache_check_store(&blocks, &cacheLengths, &lookupTable,
                                       4, 8, 0, &newRows, &rowOffsets,
                                       &message)) {
    std::printf("not called: %s\n", text);
  } else {
    _mlir_ciface_store(&blocks, &cacheLengths, &lookupTable, 4, 8, 0,
                       &newRows, &rowOffsets);
    std::printf("called\n");
  }
  std::printf("sum of blocks: %g\n", sum());
}

} // namespace

int main() {
  call(2, 3); // 'values' has 2 rows, but row_offsets[2] is 3
  call(3, 7); // sequence 0 needs 9 positions, the capacity is 8
  call(3, 3); // valid: rows 1, 1, 2, 2, 3, 3 -> sum 24
  return 0;
}
