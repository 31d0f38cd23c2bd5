//===- Profile.cpp - the GPU emulator's traffic profile ------------------===//
//
// Part of the kvcache-mlir project.
//
// KVCACHE_EMU_PROFILE=<file>: one JSON line per launch with the bytes the
// threads request, the 32-byte sectors each warp-level memory instruction
// touches against the fewest its bytes allow, shared-memory bank conflicts,
// barriers and cp.async bytes. The n-th execution of one access site by
// the lanes of a warp is one instruction.
//
//===----------------------------------------------------------------------===//

#include "Runtime.h"

#include <algorithm>
#include <cstdio>

using namespace mlir::kvcache::emulator;

namespace {

/// The distinct values of `values` / `divisor`, sorted (`values` sorted).
std::vector<uintptr_t> distinctQuotients(const std::vector<uintptr_t> &values,
                                         uintptr_t divisor) {
  std::vector<uintptr_t> quotients;
  for (uintptr_t value : values)
    quotients.push_back(value / divisor);
  quotients.erase(std::unique(quotients.begin(), quotients.end()),
                  quotients.end());
  return quotients;
}

/// Adds one warp-level instruction to the counters.
void countInstruction(const InstructionAccesses &accesses,
                      ProfileCounters &counters) {
  std::vector<uintptr_t> bytes;
  for (auto [address, size] : accesses.ranges)
    for (uint32_t i = 0; i < size; ++i)
      bytes.push_back(address + i);
  std::sort(bytes.begin(), bytes.end());
  bytes.erase(std::unique(bytes.begin(), bytes.end()), bytes.end());
  uint64_t distinct = bytes.size();
  if (accesses.shared) {
    uint64_t perBank[32] = {};
    for (uintptr_t word : distinctQuotients(bytes, 4))
      ++perBank[word % 32];
    uint64_t wavefronts = *std::max_element(perBank, perBank + 32);
    uint64_t ideal = (distinct + 127) / 128;
    if (wavefronts > ideal)
      counters.bankConflicts += wavefronts - ideal;
    return;
  }
  uint64_t sectors = distinctQuotients(bytes, 32).size();
  uint64_t ideal = (distinct + 31) / 32;
  if (accesses.store) {
    counters.storeSectors += sectors;
    counters.idealStoreSectors += ideal;
  } else {
    counters.loadSectors += sectors;
    counters.idealLoadSectors += ideal;
  }
}

} // namespace

void mlir::kvcache::emulator::recordInstruction(uintptr_t address,
                                                uint32_t bytes, bool shared,
                                                bool store, const char *site,
                                                uint32_t phase) {
  Fiber &fiber = self();
  Profile &profile = theLaunch->profile;
  uint32_t execution = fiber.executions[site]++;
  InstructionAccesses &accesses =
      profile.instructions[{fiber.linear / 32, site, execution, phase}];
  accesses.shared = shared;
  accesses.store = store;
  accesses.ranges.push_back({address, bytes});
  if (!shared)
    (store ? profile.counters.globalStoreBytes
           : profile.counters.globalLoadBytes) += bytes;
}

void mlir::kvcache::emulator::finishInstructions(Profile &profile) {
  for (auto &[key, accesses] : profile.instructions)
    countInstruction(accesses, profile.counters);
  profile.instructions.clear();
}

void mlir::kvcache::emulator::writeProfile(const Launch &launch,
                                           uint64_t sharedBytes) {
  const std::string &path = launch.profile.path;
  FILE *file = std::fopen(path.c_str(), "a");
  if (!file) {
    std::fprintf(stderr, "kvcache gpu emulator: cannot open %s\n",
                 path.c_str());
    return;
  }
  const ProfileCounters &p = launch.profile.counters;
  std::fprintf(
      file,
      "{\"kernel\": \"%s\", \"grid\": [%u, %u, %u], \"block\": [%u, %u, %u], "
      "\"shared_bytes\": %llu, \"global_load_bytes\": %llu, "
      "\"global_store_bytes\": %llu, \"load_sectors\": %llu, "
      "\"store_sectors\": %llu, \"ideal_load_sectors\": %llu, "
      "\"ideal_store_sectors\": %llu, \"shared_bank_conflicts\": %llu, "
      "\"barriers\": %llu, \"cp_async_bytes\": %llu}\n",
      launch.kernel, launch.grid.x, launch.grid.y, launch.grid.z,
      launch.block.x, launch.block.y, launch.block.z,
      (unsigned long long)sharedBytes, (unsigned long long)p.globalLoadBytes,
      (unsigned long long)p.globalStoreBytes,
      (unsigned long long)p.loadSectors, (unsigned long long)p.storeSectors,
      (unsigned long long)p.idealLoadSectors,
      (unsigned long long)p.idealStoreSectors,
      (unsigned long long)p.bankConflicts, (unsigned long long)p.barriers,
      (unsigned long long)p.cpAsyncBytes);
  std::fclose(file);
}
