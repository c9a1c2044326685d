// See host_sampler.h.
#include "enrich/host_sampler.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "record/native_signal.h"
#include "record/python_stack.h"
#include "record/python_stacks.h"
#include "record/recorder.h"

namespace gpuwatch::inject {
namespace {

uint64_t Clock(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

HostSampler& Sampler() {
  static HostSampler* s = new HostSampler;  // leaked: the thread runs until exit
  return *s;
}

bool HostSampler::SetUpNative(NativeFrames native) {
  native_ = native;  // the signal is installed with the first timer (a Python job may need none)
  return native_ != NativeFrames::kOff;
}

void HostSampler::EnableNativeForTest(double hz, NativeFrames native) {
  hz_ = hz;
  SetUpNative(native);
}

bool HostSampler::Start(double hz, double max_cpu_share, NativeFrames native) {
  if (hz <= 0) return false;
  hz_ = hz;
  max_cpu_share_ = max_cpu_share;
  const bool python = PythonLayout() != nullptr;
  if (native == NativeFrames::kAuto) native = python ? NativeFrames::kProc : NativeFrames::kSignal;
  if (!SetUpNative(native) && !python) return false;
  buffer_.reserve(1024);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);  // no signal of the job's is delivered to it
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 << 10);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t thread;
  const int rc = pthread_create(&thread, &attr, &HostSampler::Main, this);
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return rc == 0;
}

void* HostSampler::Main(void* self) {
  tl_internal = true;  // nothing it does is the job's
  static_cast<HostSampler*>(self)->Run();
  return nullptr;
}

void HostSampler::Run() {
  const uint64_t period_ns = static_cast<uint64_t>(1e9 / hz_);
  const uint64_t start = Clock(CLOCK_MONOTONIC);
  uint64_t next = start;
  for (;;) {
    next += period_ns;
    const timespec until{static_cast<time_t>(next / 1'000'000'000ull), static_cast<long>(next % 1'000'000'000ull)};
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nullptr);
    const uint64_t now = Clock(CLOCK_MONOTONIC);
    if (now > next + 10 * period_ns) next = now;  // suspended: no burst to catch up
    const uint64_t cpu = Clock(CLOCK_THREAD_CPUTIME_ID);
    cpu_ns_.store(cpu, std::memory_order_relaxed);
    // The cost bound: no sample while the sampler is over its share of wall time, or the
    // budget has nothing left. Its timers stop meanwhile (their signals would cost the job
    // for captures nobody reads), and it sleeps until the share covers it, or ten periods
    // while the budget is spent: a wake-up costs tens of us of CPU on a VM, and those count
    // too.
    const double cost = static_cast<double>(cpu + CpuTimerCaptures::handler_ns());
    const double covered = max_cpu_share_ * static_cast<double>(now - start) + kAllowanceNs;
    const bool spent = budget_spent_.load(std::memory_order_relaxed);
    if (cost > covered || spent) {
      PauseTimers(true);
      if (cost > covered && max_cpu_share_ > 0)
        next = std::max(next, start + static_cast<uint64_t>((cost - kAllowanceNs) / max_cpu_share_));
      if (spent) next += 9 * period_ns;
      continue;
    }
    if (g_state.load(std::memory_order_relaxed) == static_cast<int>(State::kOff)) return DisarmAll();
    PauseTimers(false);
    CollectRings(rings_);
    SampleOnce(rings_, now);
  }
}

void HostSampler::SampleOnce(std::span<Ring* const> rings, uint64_t now_ns) {
  const PyLayout* layout = test_layout_ ? test_layout_ : PythonLayout();
  if (native_ == NativeFrames::kSignal && native_signal_ && !CpuTimerCaptures::StillOurs()) {
    DisarmAll();  // the job took the signal over: no more of ours
    native_ = NativeFrames::kProc;
  }
  for (Armed& a : armed_) a.seen = false;
  for (size_t place = 0; place < rings.size(); ++place) {
    Ring* r = rings[place];
    if (!r->owner_alive.load(std::memory_order_acquire)) continue;
    const uintptr_t tstate = r->py_thread_state.load(std::memory_order_acquire);
    const uint64_t since = r->inflight.since_ticks.load(std::memory_order_acquire);
    const bool in_cuda = since != 0;
    if (!tstate || !layout) {
      if (native_ != NativeFrames::kOff) SampleNative(*r, now_ns, in_cuda);
      continue;
    }
    bool held = false;
    const uint32_t stack = PythonStackOf(place, *r, *layout, tstate, since, &held);
    const Sample s{now_ns, r->tid.load(std::memory_order_relaxed), stack, in_cuda};
    std::lock_guard<std::mutex> lock(mu_);
    ++samples_;
    held_samples_ += held;
    if (buffer_.size() >= kMaxBuffered) {
      ++dropped_;
      continue;
    }
    buffer_.push_back(s);
  }
  // Threads gone (or no longer sampled natively): their timers go.
  auto gone = std::remove_if(armed_.begin(), armed_.end(), [](const Armed& a) {
    if (!a.seen) CpuTimerCaptures::Disarm(a.slot);
    return !a.seen;
  });
  armed_.erase(gone, armed_.end());
  syscalls_.Sweep();
}

uint32_t HostSampler::PythonStackOf(size_t place, const Ring& r, const PyLayout& layout, uintptr_t tstate,
                                    uint64_t since, bool* held) {
  if (last_python_.size() <= place) last_python_.resize(place + 1);
  LastPython& last = last_python_[place];
  *held = since != 0 && last.ring == &r && last.tstate == tstate && last.call_since == since;
  if (*held) return last.stack_id;
  PyFrameText frames[kFramesPerSample];
  const int n = ReadPythonStack(layout, tstate, frames, kFramesPerSample, &cache_);
  // Kept for the next sample only if the thread was inside one call for all of the reads:
  // a call entered or left meanwhile may have changed the frames while they were read.
  const bool one_call = since != 0 && r.inflight.since_ticks.load(std::memory_order_acquire) == since;
  last = {&r, tstate, one_call ? since : 0, InternPythonStack(frames, n)};
  return last.stack_id;
}

int HostSampler::TimerSlot(uint32_t tid) {
  for (Armed& a : armed_)
    if (a.tid == tid) {
      a.seen = true;
      return a.slot;
    }
  if (native_ != NativeFrames::kSignal || armed_.size() >= CpuTimerCaptures::kSlots) return -1;
  if (!native_signal_ && !(native_signal_ = CpuTimerCaptures::Install())) {
    native_ = NativeFrames::kProc;  // no free signal: blocked threads only
    return -1;
  }
  const int slot = CpuTimerCaptures::Arm(tid, static_cast<uint64_t>(1e9 / hz_));
  if (slot >= 0) armed_.push_back({tid, slot, true});
  return slot;
}

void HostSampler::SampleNative(Ring& r, uint64_t now_ns, bool in_cuda) {
  NativeSample s{now_ns, r.tid.load(std::memory_order_relaxed), in_cuda, NativeSample::kRunning, 0, {}};
  const int slot = TimerSlot(s.tid);
  uintptr_t sp = 0, pc = 0;
  if (!syscalls_.Read(s.tid, &s.syscall, &sp, &pc)) return;
  if (s.syscall == NativeSample::kRunning) {
    // The latest capture of its timer. Captures come one per period of the thread's CPU
    // time, so where they land is weighted by CPU time, as running samples should be: an
    // older one (a thread that runs in short bursts) is as good a draw, up to kCaptureAge
    // periods (then it may be from another phase of the job).
    CpuTimerCaptures::Capture c;
    const uint64_t period = static_cast<uint64_t>(1e9 / hz_);
    if (slot >= 0 && CpuTimerCaptures::Latest(slot, &c) && c.t_ns + kCaptureAge * period >= now_ns) {
      s.n = c.n;
      std::memcpy(s.pcs, c.pcs, sizeof(uintptr_t) * static_cast<size_t>(c.n));
    }
  } else {
    if (now_ns - code_refreshed_ns_ > 1'000'000'000ull || code_refreshed_ns_ == 0) {
      code_.Refresh();  // libraries loaded since are code too
      code_refreshed_ns_ = now_ns;
    }
    s.n = ScanStack(pc, sp, code_, s.pcs, kNativeFrames);
  }
  std::lock_guard<std::mutex> lock(mu_);
  ++samples_;
  ++native_samples_;
  if (native_buffer_.size() >= kMaxNativeBuffered) {
    ++dropped_;
    return;
  }
  native_buffer_.push_back(s);
}

void HostSampler::PauseTimers(bool pause) {
  if (pause == timers_paused_) return;
  timers_paused_ = pause;
  const uint64_t period = pause ? 0 : static_cast<uint64_t>(1e9 / hz_);
  for (const Armed& a : armed_) CpuTimerCaptures::SetPeriod(a.slot, period);
}

void HostSampler::DisarmAll() {
  for (const Armed& a : armed_) CpuTimerCaptures::Disarm(a.slot);
  armed_.clear();
}

void HostSampler::DrainNative(std::vector<NativeSample>& out) {
  out.clear();
  std::lock_guard<std::mutex> lock(mu_);
  out.swap(native_buffer_);
}

void HostSampler::Drain(std::vector<Sample>& out) {
  out.clear();
  std::lock_guard<std::mutex> lock(mu_);
  out.swap(buffer_);
}

HostSampler::Totals HostSampler::totals() const {
  std::lock_guard<std::mutex> lock(mu_);
  return Totals{hz_,
                samples_,
                cpu_ns_.load(std::memory_order_relaxed),
                dropped_,
                native_samples_,
                CpuTimerCaptures::captures(),
                CpuTimerCaptures::handler_ns(),
                native_ == NativeFrames::kSignal ? native_signal_ : 0,
                held_samples_};
}

}  // namespace gpuwatch::inject
