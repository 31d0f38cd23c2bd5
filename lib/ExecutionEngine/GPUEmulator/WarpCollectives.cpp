//===- WarpCollectives.cpp - shuffle, ldmatrix and mma.sync --------------===//
//
// Part of the kvcache-mlir project.
//
// A warp-collective operation: each lane deposits its operands in its
// fiber and waits; the last lane of the member mask to arrive checks that
// every member waits at the same site and computes every lane's result.
// Lanes that exited, are missing from the block, or wait at another
// collective site are reported as `shuffle`.
//
//===----------------------------------------------------------------------===//

#include "Runtime.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace mlir::kvcache::emulator;

namespace {

//===----------------------------------------------------------------------===//
// Shuffle
//===----------------------------------------------------------------------===//

/// The source lane and validity of `fiber`'s shuffle for `lane` (PTX
/// shfl.sync).
std::pair<uint32_t, bool> shuffleSource(const Fiber &fiber, uint32_t lane) {
  uint32_t b = fiber.shuffleB & 31, c = fiber.shuffleC & 31;
  uint32_t segmask = (fiber.shuffleC >> 8) & 31;
  int32_t maxLane = (lane & segmask) | (c & ~segmask);
  int32_t minLane = lane & segmask;
  int32_t j = 0;
  bool valid = false;
  switch (ShuffleKind(fiber.shuffleKind)) {
  case ShuffleKind::Up:
    j = int32_t(lane) - int32_t(b);
    valid = j >= maxLane;
    break;
  case ShuffleKind::Down:
    j = int32_t(lane) + int32_t(b);
    valid = j <= maxLane;
    break;
  case ShuffleKind::Bfly:
    j = int32_t(lane ^ b);
    valid = j <= maxLane;
    break;
  default:
    j = minLane | int32_t(b & ~segmask);
    valid = j <= maxLane;
    break;
  }
  return {valid ? uint32_t(j) : lane, valid};
}

/// Gives every lane of `mask` in the warp at `warpBase` its shuffle result.
Status completeShuffle(uint32_t warpBase, uint32_t mask) {
  for (uint32_t lane = 0; lane < 32; ++lane) {
    if (!(mask >> lane & 1))
      continue;
    Fiber &member = fiberAt(warpBase + lane);
    auto [source, valid] = shuffleSource(member, lane);
    if (valid && !(mask >> source & 1)) {
      Status status = fail("shuffle", &member.id,
                           &fiberAt(warpBase + source).id, member.waitSite);
      if (endsLaunch(status))
        return status;
      source = lane;
    }
    uint32_t value = fiberAt(warpBase + source).shuffleValue;
    member.shuffleResult = uint64_t(value) | (uint64_t(valid) << 32);
  }
  return Status::Ok;
}

//===----------------------------------------------------------------------===//
// ldmatrix
//===----------------------------------------------------------------------===//

/// ldmatrix .m8n8 .b16: lane 8m + r deposited row r of matrix m (16 bytes,
/// 8 elements). Without .trans, lane l receives elements 2(l%4) and
/// 2(l%4)+1 of row l/4 of each matrix; with .trans, elements l/4 of rows
/// 2(l%4) and 2(l%4)+1 (the matrix transposed). Lower half first.
void completeLdMatrix(uint32_t warpBase) {
  uint32_t matrices = fiberAt(warpBase).ldmatrixCount;
  bool transpose = fiberAt(warpBase).ldmatrixTranspose;
  auto element = [&](uint32_t rowLane, uint32_t column) {
    const uint32_t *row = fiberAt(warpBase + rowLane).collectiveWords;
    return uint32_t(row[column / 2] >> (16 * (column % 2)) & 0xffff);
  };
  for (uint32_t lane = 0; lane < 32; ++lane) {
    Fiber &member = fiberAt(warpBase + lane);
    uint32_t group = lane / 4, pair = 2 * (lane % 4);
    for (uint32_t matrix = 0; matrix < matrices; ++matrix) {
      uint32_t rows = 8 * matrix;
      member.collectiveResults[matrix] =
          transpose ? element(rows + pair, group) |
                          element(rows + pair + 1, group) << 16
                    : element(rows + group, pair) |
                          element(rows + group, pair + 1) << 16;
    }
  }
}

//===----------------------------------------------------------------------===//
// mma.sync
//===----------------------------------------------------------------------===//

/// IEEE binary16 to binary32 (exact).
float halfToFloat(uint32_t half) {
  uint32_t exponent = half >> 10 & 0x1f, mantissa = half & 0x3ff;
  float magnitude;
  if (exponent == 0) {
    magnitude = float(mantissa) * 0x1p-24f; // exact: 10 bits
  } else {
    uint32_t bits = exponent == 0x1f ? 0x7f800000 | mantissa << 13
                                     : (exponent + 112) << 23 | mantissa << 13;
    std::memcpy(&magnitude, &bits, 4);
  }
  return half & 0x8000 ? -magnitude : magnitude;
}

/// binary32 to binary16, rounding to nearest even (as cvt.rn.f16.f32).
uint32_t floatToHalf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  uint32_t sign = bits >> 16 & 0x8000, magnitude = bits & 0x7fffffff;
  if (magnitude > 0x7f800000) // NaN: quiet, payload kept where it fits
    return sign | 0x7e00 | (magnitude >> 13 & 0x3ff);
  if (magnitude >= 0x477ff000) // rounds past 65504: infinity
    return sign | 0x7c00;
  if (magnitude < 0x38800000) // below 2^-14: a subnormal half (or zero)
    return sign | uint32_t(std::nearbyint(std::fabs(value) * 0x1p24f));
  uint32_t rounded = magnitude + 0xfff + (magnitude >> 13 & 1);
  return sign | ((rounded >> 13) - (112 << 10));
}

/// The value of 16-bit element `index` (0: the lower half) of `word`,
/// a bf16 or f16.
float multiplicand(uint32_t word, uint32_t index, bool bf16) {
  uint32_t bits = word >> (16 * index) & 0xffff;
  if (!bf16)
    return halfToFloat(bits);
  bits <<= 16;
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

/// Row and column of one element of a fragment.
struct FragmentCoord {
  uint32_t row, col;
};

// The fragments of mma.m16n8k16 and mma.m16n8k8 with f16/bf16
// multiplicands (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating
// point type" and "for mma.m16n8k8"): groupID = lane / 4, threadID_in_group
// = lane % 4, each .b32 register of A and B holding two 16-bit elements
// (lower half first).

/// A (16 x k): element i (0..k/2-1) of `lane`: row groupID (+8 for
/// i % 4 >= 2), column 2 threadID_in_group + i % 2 (+8 for i >= 4).
FragmentCoord fragmentA(uint32_t lane, uint32_t i) {
  return {lane / 4 + 8 * (i / 2 % 2), 2 * (lane % 4) + i % 2 + 8 * (i / 4)};
}

/// B (k x 8): element i (0..k/4-1): row 2 threadID_in_group + i % 2 (+8
/// for i >= 2), column groupID.
FragmentCoord fragmentB(uint32_t lane, uint32_t i) {
  return {2 * (lane % 4) + i % 2 + 8 * (i / 2), lane / 4};
}

/// C and D (16 x 8): element i (0..3): row groupID (+8 for i >= 2), column
/// 2 threadID_in_group + i % 2. f32: one register each; f16: two a
/// register.
FragmentCoord fragmentC(uint32_t lane, uint32_t i) {
  return {lane / 4 + 8 * (i / 2), 2 * (lane % 4) + i % 2};
}

/// The multiplicands and the accumulator of one warp's mma.sync.
struct MmaOperands {
  float a[16][16], b[16][8], d[16][8];
};

/// d[r][c] = fma(a[r][k-1], b[k-1][c], ... fma(a[r][0], b[0][c], d[r][c])).
[[gnu::always_inline]] inline void accumulateProducts(MmaOperands &m,
                                                      uint32_t k) {
  for (uint32_t row = 0; row < 16; ++row)
    for (uint32_t i = 0; i < k; ++i)
      for (uint32_t col = 0; col < 8; ++col)
        m.d[row][col] = std::fma(m.a[row][i], m.b[i][col], m.d[row][col]);
}

#if defined(__x86_64__)
/// The same with the FMA instructions (fma rounds once either way): the
/// libm call per product would be most of an mma.sync's time.
[[gnu::target("fma")]] void accumulateProductsWithFma(MmaOperands &m,
                                                      uint32_t k) {
  accumulateProducts(m, k);
}
#endif

void multiplyAccumulate(MmaOperands &m, uint32_t k) {
#if defined(__x86_64__)
  static const bool hasFma = __builtin_cpu_supports("fma");
  if (hasFma)
    return accumulateProductsWithFma(m, k);
#endif
  accumulateProducts(m, k);
}

/// mma.sync D = A B + C for the warp at `warpBase`. Lane registers
/// deposited: A in words 0..k/4-1, B in 4..4+k/8-1, C in 6..9 (f32) or 6..7
/// (f16x2). D[r][c] is C[r][c] converted to f32, then
/// fma(A[r][0], B[0][c], .), ..., fma(A[r][k-1], B[k-1][c], .) in f32 (the
/// products of f16 or bf16 values are exact in f32), rounded once to f16
/// for an f16 D. The GPU's order and rounding of the sum are unspecified.
void completeMma(uint32_t warpBase) {
  int32_t flags = fiberAt(warpBase).mmaFlags;
  uint32_t k = flags & kMmaK16 ? 16 : 8;
  bool bf16 = flags & kMmaBF16;
  bool accumulatorF16 = flags & kMmaAccumulatorF16;
  bool resultF16 = flags & kMmaResultF16;
  MmaOperands m;
  auto &[a, b, d] = m;
  for (uint32_t lane = 0; lane < 32; ++lane) {
    const uint32_t *words = fiberAt(warpBase + lane).collectiveWords;
    for (uint32_t i = 0; i < k / 2; ++i) {
      FragmentCoord at = fragmentA(lane, i);
      a[at.row][at.col] = multiplicand(words[i / 2], i % 2, bf16);
    }
    for (uint32_t i = 0; i < k / 4; ++i) {
      FragmentCoord at = fragmentB(lane, i);
      b[at.row][at.col] = multiplicand(words[4 + i / 2], i % 2, bf16);
    }
    for (uint32_t i = 0; i < 4; ++i) {
      FragmentCoord at = fragmentC(lane, i);
      float c;
      if (accumulatorF16)
        c = halfToFloat(words[6 + i / 2] >> (16 * (i % 2)) & 0xffff);
      else
        std::memcpy(&c, &words[6 + i], 4);
      d[at.row][at.col] = c;
    }
  }
  multiplyAccumulate(m, k);
  for (uint32_t lane = 0; lane < 32; ++lane) {
    uint32_t *results = fiberAt(warpBase + lane).collectiveResults;
    std::fill_n(results, kMaxCollectiveResults, 0u);
    for (uint32_t i = 0; i < 4; ++i) {
      FragmentCoord at = fragmentC(lane, i);
      if (resultF16)
        results[i / 2] |= floatToHalf(d[at.row][at.col]) << (16 * (i % 2));
      else
        std::memcpy(&results[i], &d[at.row][at.col], 4);
    }
  }
}

//===----------------------------------------------------------------------===//
// Waiting for the warp
//===----------------------------------------------------------------------===//

/// Completes the warp-collective operation of the warp of `fiber` when
/// every lane of its member mask has arrived (`completed`). The first
/// member lane, in lane order, that has not arrived is reported when it
/// exited or is missing from the block.
Status tryCompleteWarpCollective(Fiber &fiber, bool &completed) {
  completed = false;
  uint32_t warpBase = fiber.linear & ~31u;
  uint32_t mask = fiber.memberMask;
  uint32_t &arrived = theBlock->atWarpCollective[fiber.linear / 32];
  if (uint32_t pending = mask & ~arrived) {
    uint32_t linear = warpBase + __builtin_ctz(pending);
    if (linear >= theLaunch->threads)
      return fail("shuffle", &fiber.id, nullptr, fiber.waitSite);
    Fiber &member = fiberAt(linear);
    if (member.state == ThreadState::Done)
      return fail("shuffle", &fiber.id, &member.id, fiber.waitSite);
    return Status::Ok;
  }
  for (uint32_t lane = 0; lane < 32; ++lane) {
    if (!(mask >> lane & 1))
      continue;
    Fiber &member = fiberAt(warpBase + lane);
    if (member.memberMask != mask || member.waitSite != fiber.waitSite)
      return fail("shuffle", &fiber.id, &member.id, fiber.waitSite,
                  member.waitSite);
  }
  switch (fiber.collective) {
  case WarpCollective::Shuffle:
    if (Status status = completeShuffle(warpBase, mask); endsLaunch(status))
      return status;
    break;
  case WarpCollective::LdMatrix:
    completeLdMatrix(warpBase);
    break;
  case WarpCollective::Mma:
    completeMma(warpBase);
    break;
  }
  for (uint32_t lane = 0; lane < 32; ++lane)
    if (mask >> lane & 1)
      fiberAt(warpBase + lane).state = ThreadState::Ready;
  arrived &= ~mask;
  completed = true;
  return Status::Ok;
}

/// Waits (as `fiber`, whose operands are deposited) until its warp
/// completes the collective operation at `site` over `mask`.
Status joinWarpCollective(Fiber &fiber, WarpCollective collective,
                          uint32_t mask, const char *site) {
  fiber.collective = collective;
  fiber.memberMask = mask;
  fiber.waitSite = site;
  fiber.state = ThreadState::AtWarpCollective;
  theBlock->atWarpCollective[fiber.linear / 32] |= 1u << fiber.linear % 32;
  bool completed;
  Status status = tryCompleteWarpCollective(fiber, completed);
  if (endsLaunch(status))
    return status;
  if (!completed)
    yieldToScheduler();
  fiber.state = ThreadState::Ready;
  return Status::Ok;
}

} // namespace

bool mlir::kvcache::emulator::findMissingLane(const Fiber &fiber,
                                              const Fiber *&missing) {
  uint32_t warpBase = fiber.linear & ~31u;
  for (uint32_t lane = 0; lane < 32; ++lane) {
    if (!(fiber.memberMask >> lane & 1))
      continue;
    uint32_t linear = warpBase + lane;
    const Fiber *member =
        linear < theLaunch->threads ? &fiberAt(linear) : nullptr;
    if (!member || member->state != ThreadState::AtWarpCollective) {
      missing = member;
      return true;
    }
  }
  return false;
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

KVEMU_EXPORT int64_t __kvemu_shfl(int32_t kind, int32_t mask, int32_t value,
                                  int32_t laneOrOffset, int32_t maskAndClamp,
                                  const char *site) {
  Fiber &fiber = self();
  fiber.shuffleKind = kind;
  fiber.shuffleValue = uint32_t(value);
  fiber.shuffleB = uint32_t(laneOrOffset);
  fiber.shuffleC = uint32_t(maskAndClamp);
  if (!(uint32_t(mask) >> (fiber.linear % 32) & 1)) {
    if (endsLaunch(fail("shuffle", &fiber.id, nullptr, site)))
      endLaunchOnFiber();
    return int64_t(uint32_t(value));
  }
  if (endsLaunch(joinWarpCollective(fiber, WarpCollective::Shuffle,
                                    uint32_t(mask), site)))
    endLaunchOnFiber();
  return int64_t(fiber.shuffleResult);
}

/// Lanes 0 to 8 `matrices` - 1 each read their 16-byte row at `row` (a
/// checked shared read, one profile phase per matrix); the others'
/// addresses are ignored.
KVEMU_EXPORT void __kvemu_ldmatrix(void *row, int32_t matrices,
                                   int32_t transpose, uint32_t *fragments,
                                   const char *site) {
  Fiber &fiber = self();
  uint32_t lane = fiber.linear % 32;
  std::fill_n(fiber.collectiveWords, kMaxCollectiveWords, 0u);
  if (lane < 8 * uint32_t(matrices)) {
    bool inBounds;
    if (endsLaunch(sharedAccess(reinterpret_cast<uintptr_t>(row), 16,
                                /*write=*/false, /*atomic=*/false, site,
                                /*phase=*/lane / 8, inBounds)))
      endLaunchOnFiber();
    if (inBounds)
      std::memcpy(fiber.collectiveWords, row, 16);
  }
  fiber.ldmatrixCount = uint32_t(matrices);
  fiber.ldmatrixTranspose = transpose != 0;
  if (endsLaunch(joinWarpCollective(fiber, WarpCollective::LdMatrix, ~0u,
                                    site)))
    endLaunchOnFiber();
  std::copy_n(fiber.collectiveResults, matrices, fragments);
}

/// A (k/4 registers used), B (k/8 used) and C (4 f32, or 2 f16x2).
KVEMU_EXPORT void __kvemu_mma(int32_t flags, uint32_t a0, uint32_t a1,
                              uint32_t a2, uint32_t a3, uint32_t b0,
                              uint32_t b1, uint32_t c0, uint32_t c1,
                              uint32_t c2, uint32_t c3, uint32_t *result,
                              const char *site) {
  Fiber &fiber = self();
  uint32_t *words = fiber.collectiveWords;
  words[0] = a0, words[1] = a1, words[2] = a2, words[3] = a3;
  words[4] = b0, words[5] = b1;
  words[6] = c0, words[7] = c1, words[8] = c2, words[9] = c3;
  fiber.mmaFlags = flags;
  if (endsLaunch(joinWarpCollective(fiber, WarpCollective::Mma, ~0u, site)))
    endLaunchOnFiber();
  std::copy_n(fiber.collectiveResults, flags & kMmaResultF16 ? 2 : 4, result);
}
