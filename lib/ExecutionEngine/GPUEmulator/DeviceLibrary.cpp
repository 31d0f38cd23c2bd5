//===- DeviceLibrary.cpp - the device functions the GPU emulator supplies ===//
//
// Part of the kvcache-mlir project.
//
// The functions kvcache-emulate-nvvm calls in place of a device function
// without a body or an llvm.nvvm intrinsic (KVEMU_DEVICE_FUNCTIONS in
// EmulatorABI.h): __assertfail, vprintf, the libdevice __nv_* functions
// and the approximate math of the special function unit.
//
//===----------------------------------------------------------------------===//

#include "Runtime.h"

#include <cmath>
#include <cstdio>
#include <cstring>

using namespace mlir::kvcache::emulator;

namespace {

/// The GPU's message of a failed device assert by the running thread.
Status failAssert(const char *message, const char *file, int32_t line,
                  const char *function) {
  char text[4096];
  const Fiber *fiber = theProcess.fibers.current;
  Dim3 block = theBlock ? theBlock->id : Dim3{0, 0, 0};
  Dim3 thread = fiber ? fiber->id : Dim3{0, 0, 0};
  std::snprintf(text, sizeof(text),
                "%s:%d: %s: block: [%u,%u,%u], thread: [%u,%u,%u] Assertion "
                "`%s` failed.",
                file ? file : "", line, function ? function : "", block.x,
                block.y, block.z, thread.x, thread.y, thread.z,
                message ? message : "");
  return failFatally(text);
}

} // namespace

/// Aborts, or in capture mode ends the launch.
KVEMU_EXPORT void __kvemu_assertfail(const char *message, const char *file,
                                     int32_t line, const char *function,
                                     int64_t charSize) {
  (void)charSize;
  if (endsLaunch(failAssert(message, file, line, function)) &&
      theProcess.fibers.current)
    endLaunchOnFiber();
}

/// CUDA's vprintf: the arguments packed in a buffer, each aligned to its
/// size.
KVEMU_EXPORT int32_t __kvemu_vprintf(const char *format, const char *args) {
  std::string out;
  size_t offset = 0;
  auto take = [&](size_t size) {
    offset = (offset + size - 1) / size * size;
    const char *at = args + offset;
    offset += size;
    return at;
  };
  for (const char *p = format; *p; ++p) {
    if (*p != '%') {
      out += *p;
      continue;
    }
    std::string spec = "%";
    ++p;
    while (*p && std::strchr("-+ #0123456789.", *p))
      spec += *p++;
    int longs = 0;
    while (*p == 'l' || *p == 'h' || *p == 'z') {
      longs += *p == 'l' || *p == 'z';
      ++p;
    }
    char conversion = *p;
    if (!conversion)
      break;
    char buffer[512];
    switch (conversion) {
    case '%':
      out += '%';
      continue;
    case 'd': case 'i': case 'u': case 'x': case 'X': case 'o': case 'c': {
      long long value = 0;
      if (longs) {
        std::memcpy(&value, take(8), 8);
      } else {
        int32_t small;
        std::memcpy(&small, take(4), 4);
        value = conversion == 'd' || conversion == 'i'
                    ? (long long)small
                    : (long long)(uint32_t)small;
      }
      std::snprintf(buffer, sizeof(buffer), (spec + "ll" + conversion).c_str(),
                    value);
      if (conversion == 'c')
        std::snprintf(buffer, sizeof(buffer), "%c", char(value));
      break;
    }
    case 'f': case 'e': case 'g': case 'F': case 'E': case 'G': case 'a': {
      double value;
      std::memcpy(&value, take(8), 8);
      std::snprintf(buffer, sizeof(buffer), (spec + conversion).c_str(),
                    value);
      break;
    }
    case 's': {
      const char *value;
      std::memcpy(&value, take(8), 8);
      std::snprintf(buffer, sizeof(buffer), (spec + 's').c_str(),
                    value ? value : "(null)");
      break;
    }
    case 'p': {
      void *value;
      std::memcpy(&value, take(8), 8);
      std::snprintf(buffer, sizeof(buffer), "%p", value);
      break;
    }
    default:
      buffer[0] = 0;
      break;
    }
    out += buffer;
  }
  std::fputs(out.c_str(), stdout);
  return int32_t(out.size());
}

// Approximate math as the GPU's special function unit computes it: the
// tests compare with tolerances, and FTZ flushes subnormals to zero.
namespace {
float flush(float x) { return std::fpclassify(x) == FP_SUBNORMAL ? 0.0f : x; }
} // namespace

KVEMU_EXPORT float __kvemu_ex2_approx_f32(float x) { return std::exp2(x); }
KVEMU_EXPORT float __kvemu_ex2_approx_ftz_f32(float x) {
  return flush(std::exp2(flush(x)));
}
KVEMU_EXPORT float __kvemu_lg2_approx_f(float x) { return std::log2(x); }
KVEMU_EXPORT float __kvemu_lg2_approx_ftz_f(float x) {
  return flush(std::log2(flush(x)));
}
KVEMU_EXPORT float __kvemu_rcp_approx_ftz_f(float x) {
  return flush(1.0f / flush(x));
}
KVEMU_EXPORT float __kvemu_rsqrt_approx_f(float x) {
  return 1.0f / std::sqrt(x);
}
KVEMU_EXPORT float __kvemu_rsqrt_approx_ftz_f(float x) {
  return flush(1.0f / std::sqrt(flush(x)));
}
KVEMU_EXPORT float __kvemu_sqrt_approx_f(float x) { return std::sqrt(x); }
KVEMU_EXPORT float __kvemu_fmax_f(float a, float b) { return std::fmax(a, b); }
KVEMU_EXPORT float __kvemu_fmin_f(float a, float b) { return std::fmin(a, b); }

// libdevice functions (__nv_*).
KVEMU_EXPORT float __kvemu_nv_expf(float x) { return std::exp(x); }
KVEMU_EXPORT float __kvemu_nv_exp2f(float x) { return std::exp2(x); }
KVEMU_EXPORT float __kvemu_nv_logf(float x) { return std::log(x); }
KVEMU_EXPORT float __kvemu_nv_log2f(float x) { return std::log2(x); }
KVEMU_EXPORT float __kvemu_nv_sqrtf(float x) { return std::sqrt(x); }
KVEMU_EXPORT float __kvemu_nv_rsqrtf(float x) { return 1.0f / std::sqrt(x); }
KVEMU_EXPORT float __kvemu_nv_powf(float x, float y) { return std::pow(x, y); }
KVEMU_EXPORT float __kvemu_nv_fabsf(float x) { return std::fabs(x); }
KVEMU_EXPORT float __kvemu_nv_tanhf(float x) { return std::tanh(x); }
KVEMU_EXPORT float __kvemu_nv_sinf(float x) { return std::sin(x); }
KVEMU_EXPORT float __kvemu_nv_cosf(float x) { return std::cos(x); }
KVEMU_EXPORT float __kvemu_nv_erff(float x) { return std::erf(x); }
KVEMU_EXPORT float __kvemu_nv_fmaxf(float a, float b) { return std::fmax(a, b); }
KVEMU_EXPORT float __kvemu_nv_fminf(float a, float b) { return std::fmin(a, b); }
KVEMU_EXPORT double __kvemu_nv_exp(double x) { return std::exp(x); }
KVEMU_EXPORT double __kvemu_nv_log(double x) { return std::log(x); }
KVEMU_EXPORT double __kvemu_nv_sqrt(double x) { return std::sqrt(x); }
KVEMU_EXPORT double __kvemu_nv_tanh(double x) { return std::tanh(x); }
