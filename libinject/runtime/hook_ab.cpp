// See record/hook_ab.h. Compiled only into libgpuwatch_hook_ab.so.
#include "record/hook_ab.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <thread>

#include "enrich/cupti_reader.h"
#include "record/stamp_clock.h"

namespace gpuwatch::inject {
namespace {

// The pause mode's halves: 0 recording, 1 paused. The windows mode's states: 0 outside the
// budget's CUPTI windows, 1 inside (nothing is paused).
std::atomic<int> g_half{0};
bool g_windows_mode = false;
std::atomic<uint64_t> g_calls[2], g_call_ticks[2];
uint64_t g_t0_ns, g_t0_ticks;  // for ticks -> ns at exit
// Time in each half: added by the alternating (or watching) thread, read at exit.
std::atomic<uint64_t> g_half_ns[2];

void Report() {
  const uint64_t n0 = g_calls[0].load(), n1 = g_calls[1].load();
  if (n0 == 0 || n1 == 0) return;  // a process that made no such call (a launcher), or no window
  const double half_ns[2] = {static_cast<double>(g_half_ns[0].load()), static_cast<double>(g_half_ns[1].load())};
  const double seconds[2] = {half_ns[0] * 1e-9, half_ns[1] * 1e-9};
  const double ns0 = half_ns[0] / static_cast<double>(n0);
  const double ns1 = half_ns[1] / static_cast<double>(n1);
  const double ns_per_tick = static_cast<double>(NowNs() - g_t0_ns) / static_cast<double>(Stamp() - g_t0_ticks);
  const double in0 = static_cast<double>(g_call_ticks[0].load()) * ns_per_tick / static_cast<double>(n0);
  const double in1 = static_cast<double>(g_call_ticks[1].load()) * ns_per_tick / static_cast<double>(n1);
  if (g_windows_mode)
    std::fprintf(stderr,
                 "[gpuwatch] hook A/B: inside CUPTI windows %llu calls in %.3f s (%.1f ns each), outside %llu in "
                 "%.3f s (%.1f ns each): windows add %.1f ns per call in place, %.1f ns of it inside the calls\n",
                 static_cast<unsigned long long>(n1), seconds[1], ns1, static_cast<unsigned long long>(n0),
                 seconds[0], ns0, ns1 - ns0, in1 - in0);
  else
    std::fprintf(stderr,
                 "[gpuwatch] hook A/B: recorded %llu calls in %.3f s (%.1f ns each), paused %llu in %.3f s "
                 "(%.1f ns each): recording adds %.1f ns per call in place\n",
                 static_cast<unsigned long long>(n0), seconds[0], ns0, static_cast<unsigned long long>(n1),
                 seconds[1], ns1, ns0 - ns1);
}

// Time and calls by whether a window is open, looked at every ms (windows last >= 25 ms).
void WatchWindows() {
  uint64_t last = NowNs();
  for (;;) {
    usleep(1000);
    const uint64_t now = NowNs();
    const int was = g_half.load(std::memory_order_relaxed);
    g_half_ns[was].fetch_add(now - last, std::memory_order_relaxed);
    last = now;
    g_half.store(Cupti().RecordsKernels() ? 1 : 0, std::memory_order_relaxed);
  }
}

}  // namespace

bool HookAbPass() {
  const int half = g_half.load(std::memory_order_relaxed);
  g_calls[half].fetch_add(1, std::memory_order_relaxed);
  return half == 1 && !g_windows_mode;
}

void HookAbCallTicks(uint64_t ticks) {
  g_call_ticks[g_half.load(std::memory_order_relaxed)].fetch_add(ticks, std::memory_order_relaxed);
}

void StartHookAb() {
  g_t0_ns = NowNs();
  g_t0_ticks = Stamp();
  const char* mode = std::getenv("GPUWATCH_HOOK_AB");
  g_windows_mode = mode && std::string_view(mode) == "windows";
  std::atexit(Report);
  if (g_windows_mode) {
    std::thread(WatchWindows).detach();
    return;
  }
  if (mode && std::string_view(mode) == "paused") {  // the library running, recording nothing
    g_half.store(1, std::memory_order_relaxed);
    return;
  }
  const char* e = std::getenv("GPUWATCH_HOOK_AB_MS");
  const long ms = e ? std::strtol(e, nullptr, 10) : 7;
  const useconds_t half_us = static_cast<useconds_t>((ms > 0 ? ms : 7) * 1000);
  std::thread([half_us] {
    uint64_t last = NowNs();
    for (int half = 0;; half ^= 1) {
      usleep(half_us);
      const uint64_t now = NowNs();
      // The half's time ends where its calls stop being counted in it.
      g_half.store(half ^ 1, std::memory_order_relaxed);
      g_half_ns[half].fetch_add(now - last, std::memory_order_relaxed);
      last = now;
    }
  }).detach();
}

}  // namespace gpuwatch::inject
