// Where a *running* thread without Python is (issue 16, a C++ job): a per-thread CPU-time
// timer (timer_create on the thread's CPU clock, SIGEV_THREAD_ID) sends it a real-time
// signal only after it has run for a period of CPU time, so the signal lands while it runs,
// not while it sleeps in a syscall. The handler (async-signal-safe: no lock, no allocation,
// errno kept) walks its frame pointers (record/native_stack.h, process_vm_readv reads) into
// the thread's slot; the host sampler reads the latest capture.
//
// The remaining risk, documented in README: the timer can fire while the thread runs in the
// kernel on its way into a syscall; SA_RESTART restarts the ones the kernel restarts, but a
// few return EINTR whatever the flag (epoll_wait, poll, select, nanosleep, sigtimedwait,
// futex/sem waits with a timeout), and a pipe or socket read that already moved some bytes
// returns them early. Correct code retries these; code that does not could see them.
// GPUWATCH_NATIVE_FRAMES=proc turns the signal off (running threads then get no frame).
// The signal is the highest real-time one whose disposition is the default (nobody uses
// it); if the job installs its own handler on it later, the sampler sees it on its next
// tick and deletes every timer.
#pragma once
#include <cstdint>

#include "record/native_stack.h"

namespace gpuwatch::inject {

class CpuTimerCaptures {
 public:
  static constexpr int kSlots = 256;  // threads armed at once; more get no running frame
  struct Capture {
    uint64_t t_ns = 0;  // CLOCK_MONOTONIC
    int n = 0;
    uintptr_t pcs[kNativeFrames];
  };

  // Installs the handler (SA_SIGINFO | SA_RESTART) on a free real-time signal: its number,
  // or 0 when none is free. Once per process.
  static int Install();
  // The handler installed is still ours (the job may have replaced it).
  static bool StillOurs();
  // A timer on thread `tid`'s CPU clock, every `cpu_period_ns` of its CPU time: the slot's
  // index, or -1 (no free slot, no signal, or timer_create refused).
  static int Arm(uint32_t tid, uint64_t cpu_period_ns);
  static void Disarm(int slot);
  // Stops the slot's timer (cpu_period_ns 0) or starts it again, keeping its latest capture.
  static void SetPeriod(int slot, uint64_t cpu_period_ns);
  // The slot's latest capture; false when there is none yet or it was being written.
  static bool Latest(int slot, Capture* out);
  static uint64_t captures();  // handler runs that captured something, all threads
  static uint64_t handler_ns();  // their time on the job's threads, all threads

  // Tests: the handler's body on the given registers (as the signal would run it).
  static void CaptureForTest(int slot, uintptr_t pc, uintptr_t fp, uintptr_t sp);
};

}  // namespace gpuwatch::inject
