// Second definitions of the emulator ABI that check-emulator-abi.py finds,
// one of each kind. Comments do not count: enum AccessFlags, kMmaK16 = 1,
// "__kvemu_launch", "tid.x".
#include <cstdint>

enum EmulatorAccessFlags : int32_t { kEmulatorAccessWrite = 1 };
constexpr int32_t kSharedSpace = 3;
enum Kinds { Bfly = 0, Other = 7 };
enum Registers { TidX, TidY, TidZ };
const char *names[] = {"laneid"};
const char *entry = "__kvemu_shfl";
const char *prefix = "__kvemu_nv_";
const char *math[] = {"__nv_expf", "__nv_logf",
                      "llvm.nvvm.ex2.approx.f32"};
const char *site = "__kvemu_site_"; // not an entry point
constexpr int32_t kUnrelated = 8;   // not a flag's name
extern "C" void __kvemu_barrier(const char *site);
