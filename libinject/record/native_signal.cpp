// See native_signal.h.
#include "record/native_signal.h"

#include <signal.h>
#include <time.h>
#include <ucontext.h>

#include <atomic>
#include <cstring>

namespace gpuwatch::inject {
namespace {

// A slot: written only by its thread's handler (a seqlock: odd while writing), read by the
// sampler thread. Static storage: the handler must find it without allocating.
struct Slot {
  std::atomic<bool> armed{false};
  std::atomic<uint32_t> seq{0};
  timer_t timer{};
  uint32_t tid = 0;
  CpuTimerCaptures::Capture capture;
};

Slot g_slots[CpuTimerCaptures::kSlots];
std::atomic<int> g_signal{0};
std::atomic<uint64_t> g_captures{0};
std::atomic<uint64_t> g_handler_ns{0};  // the handler's time on the job's threads, all captures

uint64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);  // async-signal-safe (POSIX), the vDSO here
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void TakeCapture(Slot& s, uintptr_t pc, uintptr_t fp, uintptr_t sp) {
  const uint32_t seq = s.seq.load(std::memory_order_relaxed);
  s.seq.store(seq + 1, std::memory_order_relaxed);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_release);
  const uint64_t start = MonotonicNs();
  s.capture.t_ns = start;
  s.capture.n = WalkFramePointers(pc, fp, sp, s.capture.pcs, kNativeFrames, true);
  s.seq.store(seq + 2, std::memory_order_release);
  g_captures.fetch_add(1, std::memory_order_relaxed);
  // What the capture took from the job's thread, for the overhead budget (the kernel's
  // delivery of the signal is not in it).
  g_handler_ns.fetch_add(MonotonicNs() - start, std::memory_order_relaxed);
}

void Handler(int, siginfo_t* info, void* context) {
  // Only our timers' signals (si_value: the slot), only armed slots.
  if (!info || info->si_code != SI_TIMER) return;
  const int index = info->si_value.sival_int;
  if (index < 0 || index >= CpuTimerCaptures::kSlots) return;
  Slot& s = g_slots[index];
  if (!s.armed.load(std::memory_order_acquire)) return;
  const auto* uc = static_cast<const ucontext_t*>(context);
#if defined(__x86_64__)
  TakeCapture(s, static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]), static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RBP]),
          static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RSP]));
#elif defined(__aarch64__)
  TakeCapture(s, uc->uc_mcontext.pc, uc->uc_mcontext.regs[29], uc->uc_mcontext.sp);
#else
  (void)uc;
#endif
}

// The clock of thread `tid`'s CPU time (the kernel's MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)).
clockid_t ThreadCpuClock(uint32_t tid) { return static_cast<clockid_t>((~static_cast<unsigned>(tid) << 3) | 6); }

// Every cpu_period_ns of the thread's CPU time from now; 0 stops the timer.
bool StartTimer(Slot& s, uint64_t cpu_period_ns) {
  const time_t sec = static_cast<time_t>(cpu_period_ns / 1'000'000'000ull);
  const long nsec = static_cast<long>(cpu_period_ns % 1'000'000'000ull);
  const itimerspec every{{sec, nsec}, {sec, nsec}};
  return timer_settime(s.timer, 0, &every, nullptr) == 0;
}

}  // namespace

int CpuTimerCaptures::Install() {
  if (const int sig = g_signal.load(std::memory_order_relaxed)) return sig;
  for (int sig = SIGRTMAX; sig >= SIGRTMIN + 4; --sig) {  // the low ones are the usual picks
    struct sigaction old{};
    if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO)) continue;
    struct sigaction sa{};
    sa.sa_sigaction = Handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, nullptr) != 0) continue;
    g_signal.store(sig, std::memory_order_relaxed);
    return sig;
  }
  return 0;
}

bool CpuTimerCaptures::StillOurs() {
  const int sig = g_signal.load(std::memory_order_relaxed);
  struct sigaction cur{};
  return sig != 0 && sigaction(sig, nullptr, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == Handler;
}

int CpuTimerCaptures::Arm(uint32_t tid, uint64_t cpu_period_ns) {
  const int sig = g_signal.load(std::memory_order_relaxed);
  if (!sig || tid == 0) return -1;
  for (int i = 0; i < kSlots; ++i) {
    Slot& s = g_slots[i];
    if (s.armed.load(std::memory_order_relaxed)) continue;
    sigevent ev{};
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = sig;
    ev.sigev_value.sival_int = i;
    ev._sigev_un._tid = static_cast<pid_t>(tid);
    if (timer_create(ThreadCpuClock(tid), &ev, &s.timer) != 0) return -1;
    s.tid = tid;
    s.capture.n = 0;
    s.capture.t_ns = 0;  // a previous thread's capture is not this one's
    s.armed.store(true, std::memory_order_release);  // before the first signal can come
    if (!StartTimer(s, cpu_period_ns)) {
      Disarm(i);
      return -1;
    }
    return i;
  }
  return -1;
}

void CpuTimerCaptures::SetPeriod(int slot, uint64_t cpu_period_ns) {
  if (slot >= 0 && slot < kSlots && g_slots[slot].armed.load(std::memory_order_relaxed))
    StartTimer(g_slots[slot], cpu_period_ns);
}

void CpuTimerCaptures::Disarm(int slot) {
  if (slot < 0 || slot >= kSlots) return;
  Slot& s = g_slots[slot];
  if (!s.armed.load(std::memory_order_relaxed)) return;
  timer_delete(s.timer);  // no signal of it is sent after this returns
  s.armed.store(false, std::memory_order_release);
}

bool CpuTimerCaptures::Latest(int slot, Capture* out) {
  if (slot < 0 || slot >= kSlots) return false;
  Slot& s = g_slots[slot];
  const uint32_t before = s.seq.load(std::memory_order_acquire);
  if (before == 0 || (before & 1)) return false;
  std::memcpy(static_cast<void*>(out), &s.capture, sizeof *out);
  std::atomic_thread_fence(std::memory_order_acquire);
  return s.seq.load(std::memory_order_relaxed) == before && out->n >= 0 && out->n <= kNativeFrames;
}

uint64_t CpuTimerCaptures::captures() { return g_captures.load(std::memory_order_relaxed); }
uint64_t CpuTimerCaptures::handler_ns() { return g_handler_ns.load(std::memory_order_relaxed); }

void CpuTimerCaptures::CaptureForTest(int slot, uintptr_t pc, uintptr_t fp, uintptr_t sp) {
  if (slot >= 0 && slot < kSlots) TakeCapture(g_slots[slot], pc, fp, sp);
}

}  // namespace gpuwatch::inject
