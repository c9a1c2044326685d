// Where the job's CUDA-calling threads are (issue 16): a thread of its own (never the job's)
// reads each such thread's Python stack (record/python_stack.h, without the GIL, every read
// fault-safe) GPUWATCH_SAMPLE_HZ times a second. The collector joins the samples with the
// GPU's idle gaps (collector/analyze/host_frames.h): what the host was doing while the GPU
// waited for it.
//
// A thread without Python (a C++ job, GPUWATCH_NATIVE_FRAMES) gets native return addresses
// instead: /proc/self/task/TID/syscall (enrich/thread_syscalls.h) says whether it is running
// or blocked (in which syscall, at which sp and pc: its stack is then scanned,
// record/native_stack.h); a running thread's frames are the latest its CPU-time timer
// captured (record/native_signal.h). The addresses are named by the sender
// (enrich/native_frame_names.h), never here.
//
// A thread still inside the hooked call it was in at its previous sample (a sync, a copy, a
// collective: the call's entry stamp unchanged) cannot have run Python since: its sample
// takes that one's stack again, without reading the job's memory (`held_samples`).
//
// Bounded: samples wait for the sender in a buffer of kMaxBuffered (more are counted as
// dropped). Its cost is its thread's CPU time plus the time its timer's handler took on the
// job's threads; it counts in the overhead budget's spending (enrich/cupti_budget.h), and the
// sampler skips a tick while that cost is past half of the budget's share of the wall time
// (plus kAllowanceNs), or while the budget as a whole is spent (SetBudgetSpent).
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

#include "enrich/thread_syscalls.h"
#include "record/native_stack.h"
#include "record/python_stack.h"
#include "record/ring.h"

namespace gpuwatch::inject {

// GPUWATCH_NATIVE_FRAMES: native frames for threads without Python. kSignal: blocked
// threads from /proc, running ones from a CPU-time timer's signal; kProc: /proc only, no
// signal (running threads get no frame); kOff: none. kAuto (default): kSignal in a process
// without Python (a C++ job: native frames are all it has), kProc in a Python one, whose
// other threads (PyTorch's autograd and its workers) need no signal of ours for the
// frames that matter there, the Python ones.
enum class NativeFrames { kOff, kProc, kSignal, kAuto };

class HostSampler {
 public:
  static constexpr size_t kMaxBuffered = 16384;
  static constexpr uint64_t kAllowanceNs = 5'000'000;  // a short run is sampled whole
  static constexpr int kFramesPerSample = 16;
  static constexpr uint64_t kCaptureAge = 50;  // periods a running thread's capture stands for it

  struct Sample {
    uint64_t t_ns;      // CLOCK_MONOTONIC
    uint32_t tid;
    uint32_t stack_id;  // record/python_stacks.h id; 0: no Python frame
    bool in_cuda;       // inside a hooked call that can block (EnterCall)
  };
  static constexpr size_t kMaxNativeBuffered = 4096;
  // A thread without Python: its return addresses, innermost first.
  struct NativeSample {
    static constexpr int32_t kRunning = ThreadSyscalls::kRunning, kBlockedOutsideSyscall = ThreadSyscalls::kBlockedOutsideSyscall;
    uint64_t t_ns;
    uint32_t tid;
    bool in_cuda;
    int32_t syscall;  // >= 0: blocked in this syscall (the kernel's number); or kRunning, ...
    int n;
    uintptr_t pcs[kNativeFrames];
  };
  struct Totals {
    double hz = 0;
    uint64_t samples = 0, cpu_ns = 0, dropped = 0;
    uint64_t native_samples = 0, timer_captures = 0;  // of `samples`; the timer's signals handled
    uint64_t handler_ns = 0;                          // those signals' handler time, on the job's threads
    int native_signal = 0;                            // the timer's signal; 0: none
    uint64_t held_samples = 0;  // of `samples`: Python ones whose stack was the previous one's (same call)
    uint64_t cost_ns() const { return cpu_ns + handler_ns; }  // what the budget spends on it
  };

  // Starts the thread (signals blocked, its own calls unrecorded) at `hz`, its CPU time kept
  // within `max_cpu_share` of the wall time. False: not started (hz <= 0, neither readable
  // Python nor native frames, or no thread).
  bool Start(double hz, double max_cpu_share, NativeFrames native = NativeFrames::kAuto);
  // One pass: a sample of every ring's thread that is alive and has a Python thread state.
  // The thread's body; tests call it with their own rings.
  void SampleOnce(std::span<Ring* const> rings, uint64_t now_ns);
  // Sender thread: the samples taken since the last call, oldest first (`out` is reused).
  void Drain(std::vector<Sample>& out);
  void DrainNative(std::vector<NativeSample>& out);
  // Tests: native sampling as Start would set it up, without the thread.
  void EnableNativeForTest(double hz, NativeFrames native);
  // Tests: Python stacks read with this layout (a fake interpreter's), not the process's.
  void UsePythonLayoutForTest(const PyLayout* layout) { test_layout_ = layout; }
  // Sampler thread (and tests): deletes the timers of threads gone, and every timer when the
  // job took the signal's handler over.
  void DisarmAll();
  Totals totals() const;
  // The sender, after each budget update: the whole budget is spent (hooks, CUPTI and the
  // sampler together), so ticks are skipped until it has credit again.
  void SetBudgetSpent(bool spent) { budget_spent_.store(spent, std::memory_order_relaxed); }

 private:
  void Run();
  static void* Main(void* self);
  bool SetUpNative(NativeFrames native);
  void SampleNative(Ring& r, uint64_t now_ns, bool in_cuda);
  int TimerSlot(uint32_t tid);
  // Stops the armed threads' timers while no sample is taken (the budget), or starts them.
  void PauseTimers(bool pause);
  // Threads with a CPU-time timer (sampler thread only; at most CpuTimerCaptures::kSlots).
  struct Armed {
    uint32_t tid;
    int slot;
    bool seen;  // in this pass
  };

  double hz_ = 0, max_cpu_share_ = 0;
  mutable std::mutex mu_;  // buffer_ and the counts: the sampler and the sender
  std::vector<Sample> buffer_;
  std::vector<NativeSample> native_buffer_;
  uint64_t samples_ = 0, dropped_ = 0, native_samples_ = 0, held_samples_ = 0;
  NativeFrames native_ = NativeFrames::kOff;
  int native_signal_ = 0;
  std::vector<Armed> armed_;
  bool timers_paused_ = false;
  ThreadSyscalls syscalls_;   // the natively sampled threads' /proc files, kept open
  CodeRanges code_;           // refreshed about once a second
  uint64_t code_refreshed_ns_ = 0;
  std::atomic<uint64_t> cpu_ns_{0};
  std::atomic<bool> budget_spent_{false};
  std::vector<Ring*> rings_;  // the sampler's own copy of the ring list
  PyCodeCache cache_;         // the sampler's thread only
  const PyLayout* test_layout_ = nullptr;
  // A thread's last Python sample, by its ring's place in the list (rings are only added):
  // the call it was inside for the whole of that sample's reads (its entry stamp; 0: none),
  // and the stack they gave. A stamp is its call's alone on a thread (TSC ticks, or ns).
  struct LastPython {
    const Ring* ring = nullptr;
    uintptr_t tstate = 0;
    uint64_t call_since = 0;
    uint32_t stack_id = 0;
  };
  std::vector<LastPython> last_python_;
  // The stack id of the Python thread at `place` (`since`: the call it is inside, 0: none);
  // *held: taken from its last sample, nothing read.
  uint32_t PythonStackOf(size_t place, const Ring& r, const PyLayout& layout, uintptr_t tstate, uint64_t since,
                         bool* held);
};

// The process's sampler (started by the sender when GPUWATCH_SAMPLE_HZ > 0).
HostSampler& Sampler();

}  // namespace gpuwatch::inject
