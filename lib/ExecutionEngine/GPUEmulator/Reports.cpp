//===- Reports.cpp - the GPU emulator's failure reports and totals -------===//
//
// Part of the kvcache-mlir project.
//
// A failed check is one line:
//
//   kvcache gpu emulator: <kind>: kernel <name> block (x,y,z)
//       threads (x,y,z) and (x,y,z) at <file>:<line>:<col>
//
// By default (mlir-runner) it goes to stderr and the process aborts; with
// KVCACHE_EMU_ON_ERROR=continue each (kind, site pair) is reported once and
// the process exits with status 1 at the end. In capture mode (an
// in-process host, GPUEmulator.h) the line is recorded instead, and a
// failure that would abort ends the launch.
//
//===----------------------------------------------------------------------===//

#include "Runtime.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include <unistd.h>

using namespace mlir::kvcache::emulator;

namespace {

void exitWithFailure() {
  std::fflush(nullptr);
  _exit(1);
}

std::string describe(Dim3 id) {
  char text[64];
  std::snprintf(text, sizeof(text), "(%u,%u,%u)", id.x, id.y, id.z);
  return text;
}

/// Records or prints `line`; then aborts, goes on, or (capture mode) ends
/// the launch. `fatal`: even KVCACHE_EMU_ON_ERROR=continue does not go on.
Status deliver(const std::string &line, bool fatal) {
  Reports &reports = theProcess.reports;
  reports.text += line;
  reports.text += '\n';
  ++reports.errors;
  bool ends = fatal || !(theLaunch && theLaunch->continueOnError);
  if (reports.capturing()) {
    if (!ends)
      return Status::Reported;
    reports.stopped = true;
    if (theLaunch)
      theLaunch->failed = true;
    return Status::EndLaunch;
  }
  std::fputs(line.c_str(), stderr);
  std::fputc('\n', stderr);
  std::fflush(stderr);
  if (ends)
    abortQuietly();
  if (!reports.exitStatusInstalled) {
    reports.exitStatusInstalled = true;
    std::atexit(exitWithFailure);
  }
  return Status::Reported;
}

/// KVCACHE_EMU_STATS=1: what the emulator did, at exit, to stderr.
void printStatistics() {
  const Totals &t = theProcess.totals;
  auto millionsPerSecond = [&](uint64_t count) {
    return t.seconds > 0 ? count / t.seconds / 1e6 : 0.0;
  };
  std::fprintf(stderr,
               "kvcache gpu emulator: %llu launches, %llu blocks, %llu "
               "threads, %llu thread switches, %llu memory accesses checked, "
               "%.3f CPU seconds in kernels (%.1f million switches/s, %.1f "
               "million checked accesses/s)\n",
               (unsigned long long)t.launches, (unsigned long long)t.blocks,
               (unsigned long long)t.threads, (unsigned long long)t.switches,
               (unsigned long long)t.accesses, t.seconds,
               millionsPerSecond(t.switches), millionsPerSecond(t.accesses));
}

} // namespace

void mlir::kvcache::emulator::abortQuietly() {
  std::fflush(nullptr);
  std::signal(SIGABRT, SIG_DFL);
  std::abort();
}

void mlir::kvcache::emulator::calledOutsideLaunch() {
  std::fputs("kvcache gpu emulator: a device function was called outside "
             "a kernel launch\n",
             stderr);
  abortQuietly();
}

Status mlir::kvcache::emulator::fail(const char *kind, const Dim3 *first,
                                     const Dim3 *second, const char *site,
                                     const char *otherSite) {
  if (theLaunch->continueOnError &&
      !theProcess.reports.seen.insert({kind, site, otherSite}).second)
    return Status::Reported;
  std::string line = std::string("kvcache gpu emulator: ") + kind +
                     ": kernel " + theLaunch->kernel + " block " +
                     describe(theBlock->id);
  if (first && second)
    line += " threads " + describe(*first) + " and " + describe(*second);
  else if (first)
    line += " thread " + describe(*first);
  line += std::string(" at ") + (site ? site : "unknown");
  return deliver(line, /*fatal=*/false);
}

Status mlir::kvcache::emulator::failFatally(const std::string &line) {
  return deliver(line, /*fatal=*/true);
}

double mlir::kvcache::emulator::cpuSeconds() {
  // Wall time on a shared machine would measure the neighbours.
  timespec now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return now.tv_sec + now.tv_nsec * 1e-9;
}

void mlir::kvcache::emulator::installStatistics() {
  Totals &totals = theProcess.totals;
  if (!totals.printAtExit && std::getenv("KVCACHE_EMU_STATS")) {
    totals.printAtExit = true;
    std::atexit(printStatistics);
  }
}
