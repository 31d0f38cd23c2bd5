//===- Fp8ToInteger.cpp - fp8 conversions as integer arithmetic ----------===//
//
// Part of the kvcache-mlir project.
//
// Decoding fp8 codes without fp8 arithmetic goes through f16, which holds
// every fp8 value exactly, in 16-bit lanes (half the vector work of 32-bit
// ones): E5M2 is the high byte of an f16; an E4M3FN code shifted into an
// f16's exponent and mantissa is its value / 2^8 (its exponent bias is 7
// where f16's is 15; subnormals too), and magnitude 0x7F, NaN, becomes an
// f16 NaN with the code's sign. The f16 -> f32 extension is the chip's own
// instruction (x86 F16C, PTX cvt.f32.f16); times 2^8 is exact.
//
// Encoding runs on the f32 bits. The magnitude is first clamped to
// max_finite as an integer (non-negative f32 bit patterns order like their
// values; +inf and anything above max_finite become max_finite, which
// rounding can then no longer exceed): the target-neutral form's clamp is
// part of it. Then one f32 add does the rounding: adding M = 2^(e + 20)
// (2^(e + 21) for E5M2), e being the exponent of |x| but at least the
// smallest normal exponent, leaves the sum in M's binade, so the hardware
// rounds |x| to the code's step, ties to even, subnormal codes included,
// and the sum's low bits count those steps. The code is that count plus a
// term of M's exponent (a mantissa carry rolls into the exponent, as it
// should): about 12 vector instructions per 16 values on AVX-512, the sign
// and the NaN code taken from the f32's top byte. Every f32 bit pattern
// was checked against the per-case formulation this replaced (integer
// ties-to-even rounding for normals, a 2^23 add for subnormals).
//
//===----------------------------------------------------------------------===//

#include "Fp8ToInteger.h"
#include "Quantization.h"

#include "KVCache/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/bit.h"

#include <numeric>

namespace mlir {
#define GEN_PASS_DEF_KVCACHEFP8TOINTEGER
#include "KVCache/Conversion/Passes.h.inc"
} // namespace mlir

using namespace mlir;
using namespace mlir::kvcache;

//===----------------------------------------------------------------------===//
// Codecs
//===----------------------------------------------------------------------===//

/// fp8 `codes` as f16, exactly, from their bits: E5M2 values; E4M3FN values
/// / 2^8.
static Value decodeFp8ToScaledF16(OpBuilder &b, Location loc, Value codes) {
  Type storage = getElementTypeOrSelf(codes.getType());
  ShapedArith a{b, loc, codes.getType()};
  Type i8 = a.like(b.getI8Type()), i16 = a.like(b.getI16Type());
  Value byte = arith::BitcastOp::create(b, loc, i8, codes);
  Value halfBits;
  if (isa<Float8E5M2Type>(storage)) {
    halfBits =
        arith::ShLIOp::create(b, loc, arith::ExtUIOp::create(b, loc, i16, byte),
                              a.constantInt(8, 16));
  } else {
    // Sign-extended and shifted, the sign lands in bit 15 and, wrongly, bit
    // 14 (the top exponent bit, 0 for every E4M3FN value), bits 13..7 are
    // the code's magnitude and bits 6..0 are 0. Bit 14 of shifted + 0x80 is
    // the sign flipped, except where the magnitude is 0x7F (the NaN code):
    // there the carry out of bits 13..7 flips it back. Xor-ing that bit
    // into shifted clears bit 14 for every value and sets it for the NaN
    // code: exponent 31 and a nonzero mantissa, an f16 NaN with its sign.
    // An add and one bitwise operation (x86 vpternlog), no compare.
    Value shifted =
        arith::ShLIOp::create(b, loc, arith::ExtSIOp::create(b, loc, i16, byte),
                              a.constantInt(7, 16));
    Value carried =
        arith::AddIOp::create(b, loc, shifted, a.constantInt(0x80, 16));
    halfBits = arith::XOrIOp::create(
        b, loc, shifted,
        arith::AndIOp::create(b, loc, carried, a.constantInt(0x4000, 16)));
  }
  return arith::BitcastOp::create(b, loc, a.like(b.getF16Type()), halfBits);
}

/// decodeFp8ToF32WithIntegers, optionally `unscaled` (E4M3FN values / 2^8).
static Value decodeFp8ViaF16(OpBuilder &b, Location loc, Value codes,
                             bool unscaled) {
  bool e5m2 = isa<Float8E5M2Type>(getElementTypeOrSelf(codes.getType()));
  ShapedArith a{b, loc, codes.getType()};
  Value half = decodeFp8ToScaledF16(b, loc, codes);
  Value value =
      arith::ExtFOp::create(b, loc, a.like(b.getF32Type()), half).getResult();
  if (e5m2 || unscaled)
    return value;
  return arith::MulFOp::create(b, loc, value, a.constantF32(256.0f));
}

Value mlir::kvcache::decodeFp8ToF32WithIntegers(OpBuilder &b, Location loc,
                                                Value codes) {
  return decodeFp8ViaF16(b, loc, codes, /*unscaled=*/false);
}

/// fp8 `codes` as f16 values, exactly (times 2^8 in f16 for E4M3FN).
static Value decodeFp8ToF16WithIntegers(OpBuilder &b, Location loc,
                                        Value codes) {
  Value half = decodeFp8ToScaledF16(b, loc, codes);
  if (isa<Float8E5M2Type>(getElementTypeOrSelf(codes.getType())))
    return half;
  ShapedArith a{b, loc, codes.getType()};
  return arith::MulFOp::create(b, loc, half,
                               a.constant(b.getF16FloatAttr(256.0f)));
}

float mlir::kvcache::getUnscaledDecodeFactor(Type storage) {
  return isa<Float8E4M3FNType>(storage) ? 256.0f : 1.0f;
}

Value mlir::kvcache::decodeStorageToF32Unscaled(OpBuilder &b, Location loc,
                                                Value codes, float &factor) {
  Type storage = getElementTypeOrSelf(codes.getType());
  factor = getUnscaledDecodeFactor(storage);
  if (!isFp8StorageType(storage))
    return decodeStorageToF32(b, loc, codes);
  return decodeFp8ViaF16(b, loc, codes, /*unscaled=*/factor != 1.0f);
}

Value mlir::kvcache::encodeF32ToFp8WithIntegers(OpBuilder &b, Location loc,
                                                Value values, Type storage) {
  ShapedArith a{b, loc, values.getType()};
  Value words = encodeF32ToFp8Words(b, loc, values, storage);
  return arith::BitcastOp::create(
      b, loc, a.like(storage),
      arith::TruncIOp::create(b, loc, a.like(b.getI8Type()), words));
}

Value mlir::kvcache::encodeF32ToFp8Words(OpBuilder &b, Location loc,
                                         Value values, Type storage) {
  ShapedArith a{b, loc, values.getType()};
  Type f32 = a.like(b.getF32Type()), i32 = a.like(b.getI32Type());
  auto bitcast = [&](Type type, Value value) -> Value {
    return arith::BitcastOp::create(b, loc, type, value);
  };
  bool e4m3 = isa<Float8E4M3FNType>(storage);
  assert((e4m3 || isa<Float8E5M2Type>(storage)) && "not a storage type");
  int64_t mantissaBits = e4m3 ? 3 : 2;
  int64_t shift = 23 - mantissaBits;
  int64_t minNormalExponent = e4m3 ? -6 : -14;
  int64_t minNormalBits = (127 + minNormalExponent) << 23; // 2^-6, 2^-14
  // The code is k + (bits(M) >> shift) - K (see below), of which only the
  // low 8 bits are stored: M's mantissa carries -K mod 256, an even number
  // (the rounded sum's last bit keeps k's parity), and no subtraction is
  // left.
  int64_t k = ((127 + minNormalExponent + shift) << mantissaBits) & 0xFF;
  int64_t minusK = (256 - k) & 0xFF;
  auto constant = [&](int64_t value) { return a.constantInt(value, 32); };

  Value bits = bitcast(i32, values);
  Value magnitude = arith::AndIOp::create(b, loc, bits, constant(0x7FFFFFFF));
  Value isNaN = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt,
                                      magnitude, constant(0x7F800000));
  Value maxBits = constant(
      static_cast<int64_t>(llvm::bit_cast<uint32_t>(getMaxFinite(storage))));
  magnitude = arith::MinUIOp::create(b, loc, magnitude, maxBits);
  // M = 2^(max(e, e_min) + shift) plus minusK units in its last place, for
  // |x| in [2^e, 2^(e+1)): |x| + M keeps M's exponent, so the f32 add
  // rounds |x| to a multiple of the code's step 2^(max(e, e_min) -
  // mantissa bits), ties to even, and bits(|x| + M) - bits(M) is the number
  // k of steps (2^mantissa_bits .. 2^(mantissa_bits + 1) for normals, the
  // implicit bit included; 0 .. 2^mantissa_bits for subnormals). The code
  // is (max(e, e_min) - e_min) << mantissa_bits plus k - 2^mantissa_bits
  // for normals, k for subnormals: both k + (bits(M) >> shift) - K with
  // K = (127 + e_min + shift) << mantissa_bits.
  Value exponent = arith::AndIOp::create(
      b, loc,
      arith::MaxUIOp::create(b, loc, magnitude, constant(minNormalBits)),
      constant(0x7F800000));
  Value bias = arith::AddIOp::create(b, loc, exponent,
                                     constant((shift << 23) + minusK));
  Value sum = arith::AddFOp::create(b, loc, bitcast(f32, magnitude),
                                    bitcast(f32, bias));
  // Its low 8 bits are the magnitude's code (at most 0x7E: bit 7 is 0).
  Value code = arith::AddIOp::create(
      b, loc, bitcast(i32, sum),
      arith::ShRUIOp::create(b, loc, bias, constant(shift)));
  // The sign from the f32's top byte, which for NaN is S.1111111: the
  // E4M3FN NaN code as it is; E5M2's is S.1111110.
  Value top = arith::ShRUIOp::create(b, loc, bits, constant(24));
  Value signed_ = arith::OrIOp::create(
      b, loc, arith::AndIOp::create(b, loc, top, constant(0x80)), code);
  Value nan = e4m3 ? top : arith::XOrIOp::create(b, loc, top, constant(1));
  return arith::SelectOp::create(b, loc, isNaN, nan, signed_);
}

Value mlir::kvcache::packFp8CodeWords(OpBuilder &b, Location loc,
                                      ArrayRef<Value> words, Type storage) {
  int64_t width = cast<VectorType>(words.front().getType()).getNumElements();
  auto bytesType = VectorType::get({4 * width}, b.getI8Type());
  // Little endian: word i's low byte is byte 4i.
  SmallVector<int64_t> lowBytes;
  for (int64_t i = 0; i < 2 * width; ++i)
    lowBytes.push_back(4 * i);
  SmallVector<Value> parts;
  for (size_t i = 0; i < words.size(); i += 2) {
    Value first = vector::BitCastOp::create(b, loc, bytesType, words[i]);
    if (i + 1 == words.size()) {
      parts.push_back(vector::ShuffleOp::create(
          b, loc, first, first, ArrayRef(lowBytes).take_front(width)));
      continue;
    }
    Value second = vector::BitCastOp::create(b, loc, bytesType, words[i + 1]);
    parts.push_back(
        vector::ShuffleOp::create(b, loc, first, second, lowBytes));
  }
  // The parts, concatenated in order.
  while (parts.size() > 1) {
    SmallVector<Value> joined;
    for (size_t i = 0; i + 1 < parts.size(); i += 2) {
      int64_t n = cast<VectorType>(parts[i].getType()).getNumElements() +
                  cast<VectorType>(parts[i + 1].getType()).getNumElements();
      SmallVector<int64_t> order(n);
      std::iota(order.begin(), order.end(), 0);
      joined.push_back(
          vector::ShuffleOp::create(b, loc, parts[i], parts[i + 1], order));
    }
    if (parts.size() % 2)
      joined.push_back(parts.back());
    parts = std::move(joined);
  }
  auto codesType = cast<VectorType>(parts.front().getType()).clone(storage);
  return arith::BitcastOp::create(b, loc, codesType, parts.front());
}

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

namespace {

/// Whether `op` extends f16 values to f32.
bool isExtensionToF32(Operation *op) {
  auto extf = dyn_cast<arith::ExtFOp>(op);
  return extf && getElementTypeOrSelf(extf.getType()).isF32();
}

/// `arith.extf` of fp8 codes: to f32 one decoding; to f16 either one
/// decoding per user when every user extends to f32 (the codecs' form:
/// the f32 decoding of E4M3FN scales in f32), or an f16 decoding.
struct DecodeFp8WithIntegers : OpRewritePattern<arith::ExtFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::ExtFOp op,
                                PatternRewriter &rewriter) const override {
    Value codes = op.getIn();
    if (!isFp8StorageType(getElementTypeOrSelf(codes.getType())))
      return rewriter.notifyMatchFailure(op, "not a decoding of fp8 codes");
    Type result = getElementTypeOrSelf(op.getType());
    if (result.isF32()) {
      rewriter.replaceOp(
          op, decodeFp8ToF32WithIntegers(rewriter, op.getLoc(), codes));
      return success();
    }
    if (!result.isF16())
      return rewriter.notifyMatchFailure(op, "neither to f16 nor to f32");
    if (op->use_empty() || !llvm::all_of(op->getUsers(), isExtensionToF32)) {
      rewriter.replaceOp(
          op, decodeFp8ToF16WithIntegers(rewriter, op.getLoc(), codes));
      return success();
    }
    for (Operation *user : llvm::make_early_inc_range(op->getUsers())) {
      rewriter.setInsertionPoint(user);
      rewriter.replaceOp(
          user, decodeFp8ToF32WithIntegers(rewriter, user->getLoc(), codes));
    }
    rewriter.eraseOp(op);
    return success();
  }
};

/// The saturating fp8 truncation of truncateToFp8Saturated.
struct EncodeFp8WithIntegers : OpRewritePattern<arith::TruncFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::TruncFOp op,
                                PatternRewriter &rewriter) const override {
    Value values = matchFp8Saturation(op);
    if (!values)
      return rewriter.notifyMatchFailure(op, "not a saturating fp8 encoding");
    rewriter.replaceOp(
        op, encodeF32ToFp8WithIntegers(rewriter, op.getLoc(), values,
                                       getElementTypeOrSelf(op.getType())));
    return success();
  }
};

} // namespace

void mlir::kvcache::populateFp8ToIntegerPatterns(RewritePatternSet &patterns,
                                                 PatternBenefit benefit) {
  patterns.add<DecodeFp8WithIntegers, EncodeFp8WithIntegers>(
      patterns.getContext(), benefit);
}

LogicalResult
mlir::kvcache::applyFp8ConversionPatterns(Operation *root,
                                          RewritePatternSet &&patterns) {
  // The greedy driver erases the ops the patterns leave dead (the clamp of
  // an encoding, an f16 decoding whose users were decoded), as it erases any
  // trivially dead op; no folding and no constant hoisting, so the code
  // around the conversions stays as it was.
  GreedyRewriteConfig config;
  config.enableFolding(false)
      .enableConstantCSE(false)
      .setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
  return applyPatternsGreedily(root, std::move(patterns), config);
}

namespace {
struct KVCacheFp8ToIntegerPass
    : impl::KVCacheFp8ToIntegerBase<KVCacheFp8ToIntegerPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFp8ToIntegerPatterns(patterns);
    if (failed(applyFp8ConversionPatterns(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
