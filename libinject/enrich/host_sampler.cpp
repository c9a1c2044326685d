// See host_sampler.h.
#include "enrich/host_sampler.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

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

bool HostSampler::Start(double hz, double max_cpu_share) {
  if (hz <= 0 || !PythonLayout()) return false;
  hz_ = hz;
  max_cpu_share_ = max_cpu_share;
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
    // The cost bound: a tick is skipped while the sampler is over its share of wall time.
    if (static_cast<double>(cpu) > max_cpu_share_ * static_cast<double>(now - start) + kAllowanceNs) continue;
    if (g_state.load(std::memory_order_relaxed) == static_cast<int>(State::kOff)) return;
    CollectRings(rings_);
    SampleOnce(rings_, now);
  }
}

void HostSampler::SampleOnce(std::span<Ring* const> rings, uint64_t now_ns) {
  const PyLayout* layout = PythonLayout();
  if (!layout) return;
  PyFrameText frames[kFramesPerSample];
  for (Ring* r : rings) {
    if (!r->owner_alive.load(std::memory_order_acquire)) continue;
    const uintptr_t tstate = r->py_thread_state.load(std::memory_order_acquire);
    if (!tstate) continue;
    const bool in_cuda = r->inflight.since_ticks.load(std::memory_order_relaxed) != 0;
    const int n = ReadPythonStack(*layout, tstate, frames, kFramesPerSample, &cache_);
    const Sample s{now_ns, r->tid.load(std::memory_order_relaxed), InternPythonStack(frames, n), in_cuda};
    std::lock_guard<std::mutex> lock(mu_);
    ++samples_;
    if (buffer_.size() >= kMaxBuffered) {
      ++dropped_;
      continue;
    }
    buffer_.push_back(s);
  }
}

void HostSampler::Drain(std::vector<Sample>& out) {
  out.clear();
  std::lock_guard<std::mutex> lock(mu_);
  out.swap(buffer_);
}

HostSampler::Totals HostSampler::totals() const {
  std::lock_guard<std::mutex> lock(mu_);
  return Totals{hz_, samples_, cpu_ns_.load(std::memory_order_relaxed), dropped_};
}

}  // namespace gpuwatch::inject
