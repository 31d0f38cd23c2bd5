// What bounds the CPU's quantizing store (bench/report.md section 2): the
// work of store_ragged on an f8E4M3FN token_head cache, written by hand
// with AVX-512 intrinsics in the shape kvcache-to-cpu lowers it to (per
// token row, every head's scale first, then the codes), timed against a
// memcpy of the same f16 bytes, with parts of the work taken away:
//
//   exact   the contract's work: x / scale by a correctly rounded division
//           (vdivps), rounded to E4M3FN by the f32-add encoder; the amax on
//           the halves' bits (16-bit lanes), 64 codes gathered into one
//           vector by two vpermt2b per store;
//   mul     x * (1 / scale) instead of the division (NOT the contract's
//           result: a bound on what the division costs);
//   noenc   f16 -> f32, amax and scale, the values truncated to bytes: no
//           division, no rounding (the cost of moving the data alone).
//
// Build and run (AVX-512 with FP16 conversions; one thread):
//   clang-22 -O3 -march=native bench/cpu/quantize_bound.c -o /tmp/qb && /tmp/qb
// Prints the best of several repetitions of each as a ratio to the memcpy.
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { HEADS = 8, DIM = 128, TOKENS = 4096, N = TOKENS * HEADS * DIM };
enum Mode { EXACT, MUL, NOENC, MODES };
static const char *kNames[MODES] = {"exact", "mul", "noenc"};

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

// |q| rounded to an E4M3FN code (ties to even, saturating, NaN to 0x7F with
// its sign): the encoder of lib/Conversion/KernelCommon/Quantization.cpp.
static inline __m512i encode(__m512 q) {
  __m512i bits = _mm512_castps_si512(q);
  __m512i mag = _mm512_and_si512(bits, _mm512_set1_epi32(0x7FFFFFFF));
  __mmask16 nan = _mm512_cmpgt_epu32_mask(mag, _mm512_set1_epi32(0x7F800000));
  mag = _mm512_min_epu32(mag, _mm512_set1_epi32(0x43E00000));
  __m512i m = _mm512_add_epi32(
      _mm512_and_si512(_mm512_max_epu32(mag, _mm512_set1_epi32(0x3C800000)),
                       _mm512_set1_epi32(0x7F800000)),
      _mm512_set1_epi32((20 << 23) + 0x98));
  __m512 sum = _mm512_add_ps(_mm512_castsi512_ps(mag), _mm512_castsi512_ps(m));
  __m512i code = _mm512_add_epi32(_mm512_castps_si512(sum),
                                  _mm512_srli_epi32(m, 20));
  __m512i top = _mm512_srli_epi32(bits, 24);
  __m512i merged = _mm512_or_si512(
      code, _mm512_and_si512(top, _mm512_set1_epi32(0x80)));
  return _mm512_mask_blend_epi32(nan, merged, top);
}

// The largest non-NaN magnitude of 128 halves, on their bits: |x| + 0x3FF
// wraps NaNs to negative 16-bit integers, which a signed maximum drops.
static float amax128(const _Float16 *p) {
  __m512i m = _mm512_set1_epi16(0x3FF);
  for (int i = 0; i < 128; i += 32)
    m = _mm512_max_epi16(
        m, _mm512_add_epi16(_mm512_and_si512(_mm512_loadu_si512((const void *)(p + i)),
                                             _mm512_set1_epi16(0x7FFF)),
                            _mm512_set1_epi16(0x3FF)));
  __m256i m2 = _mm256_max_epi16(_mm512_castsi512_si256(m), _mm512_extracti64x4_epi64(m, 1));
  __m128i m3 = _mm_max_epi16(_mm256_castsi256_si128(m2), _mm256_extracti128_si256(m2, 1));
  m3 = _mm_max_epi16(m3, _mm_shuffle_epi32(m3, 0x4E));
  m3 = _mm_max_epi16(m3, _mm_shuffle_epi32(m3, 0xB1));
  m3 = _mm_max_epi16(m3, _mm_srli_epi32(m3, 16));
  uint16_t bits = (uint16_t)(_mm_cvtsi128_si32(m3) - 0x3FF);
  _Float16 half;
  memcpy(&half, &bits, 2);
  return (float)half;
}

static void store(const _Float16 *rows, uint8_t *codes, float *scales,
                  enum Mode mode) {
  // Byte 4i of two vectors of 16 words: their low bytes, in order.
  __m512i lowBytes = _mm512_set_epi8(
      124, 120, 116, 112, 108, 104, 100, 96, 92, 88, 84, 80, 76, 72, 68, 64,
      60, 56, 52, 48, 44, 40, 36, 32, 28, 24, 20, 16, 12, 8, 4, 0,
      124, 120, 116, 112, 108, 104, 100, 96, 92, 88, 84, 80, 76, 72, 68, 64,
      60, 56, 52, 48, 44, 40, 36, 32, 28, 24, 20, 16, 12, 8, 4, 0);
  for (long token = 0; token < TOKENS; ++token) {
    const _Float16 *row = rows + token * HEADS * DIM;
    float scale[HEADS];
    for (int h = 0; h < HEADS; ++h) {
      float amax = amax128(row + h * DIM);
      scale[h] = amax == 0 ? 1.0f : amax / 448.0f;
      scales[token * HEADS + h] = scale[h];
    }
    for (int h = 0; h < HEADS; ++h) {
      __m512 divisor = _mm512_set1_ps(scale[h]);
      __m512 reciprocal = _mm512_set1_ps(1.0f / scale[h]);
      for (int i = 0; i < DIM; i += 64) {
        __m512i code[4];
        for (int j = 0; j < 4; ++j) {
          __m512 x = _mm512_cvtph_ps(
              _mm256_loadu_si256((const void *)(row + h * DIM + i + 16 * j)));
          code[j] = mode == EXACT ? encode(_mm512_div_ps(x, divisor))
                    : mode == MUL ? encode(_mm512_mul_ps(x, reciprocal))
                                  : _mm512_castps_si512(x);
        }
        __m512i low = _mm512_permutex2var_epi8(code[0], lowBytes, code[1]);
        __m512i high = _mm512_permutex2var_epi8(code[2], lowBytes, code[3]);
        _mm512_storeu_si512(
            (void *)(codes + token * HEADS * DIM + h * DIM + i),
            _mm512_inserti64x4(low, _mm512_castsi512_si256(high), 1));
      }
    }
  }
}

// Reads every output, so that no work is optimized away.
static unsigned checksum(const void *data, long bytes) {
  const uint8_t *p = data;
  unsigned sum = 0;
  for (long i = 0; i < bytes; i += 64)
    sum += p[i];
  return sum;
}

int main(void) {
  _Float16 *rows = aligned_alloc(64, N * 2), *copy = aligned_alloc(64, N * 2);
  uint8_t *codes = aligned_alloc(64, N);
  float *scales = aligned_alloc(64, TOKENS * HEADS * 4);
  for (long i = 0; i < N; ++i)
    rows[i] = (_Float16)((float)(i * 7919 % 2001 - 1000) / 100.0f);
  memset(codes, 0, N);
  memset(copy, 0, N * 2);
  double best[MODES + 1];
  unsigned sink = 0;
  for (int m = 0; m <= MODES; ++m)
    best[m] = 1e9;
  for (int rep = 0; rep < 9; ++rep) {
    for (int m = 0; m < MODES; ++m) {
      double start = now();
      store(rows, codes, scales, (enum Mode)m);
      double t = now() - start;
      if (rep > 0 && t < best[m])
        best[m] = t;
      sink += checksum(codes, N) + checksum(scales, TOKENS * HEADS * 4);
    }
    double start = now();
    memcpy(copy, rows, N * 2);
    double t = now() - start;
    if (rep > 0 && t < best[MODES])
      best[MODES] = t;
    sink += checksum(copy, N * 2);
    rows[rep] = (_Float16)rep; // a new copy each time
  }
  printf("%d f16 rows of %d x %d -> E4M3FN token_head, one thread, best of 8\n",
         TOKENS, HEADS, DIM);
  printf("memcpy of the f16 bytes: %.3f ms (checksum %u)\n", best[MODES] * 1e3,
         sink);
  for (int m = 0; m < MODES; ++m)
    printf("%-6s %.3f ms, %.2fx memcpy\n", kNames[m], best[m] * 1e3,
           best[MODES] / best[m]);
  return 0;
}
