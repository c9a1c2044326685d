#include "runtime/sender.h"
#include "runtime/signals.h"
#include "record/stamp_clock.h"

#include <cuda_runtime_api.h>
#include <signal.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <list>
#include <mutex>
#include <string>
#include <pthread.h>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "record/call_sites.h"
#include "record/collective_timer.h"
#include "transport/outbox.h"
#include "enrich/comm_kernel_times.h"
#include "runtime/config.h"
#include "enrich/cupti_reader.h"
#include "transport/encode.h"
#include "enrich/environment_probe.h"
#include "enrich/proc_sampler.h"
#include "wire_encode.h"
#include "transport/identity.h"
#include "record/pinned_ranges.h"
#include "record/real.h"
#include "record/recorder.h"
#include "record/registry.h"

namespace gpuwatch::inject {
namespace {

extern std::atomic<bool> g_signal_stop;
extern std::atomic<bool> g_finished;

struct Pending {
  std::vector<std::pair<Record, uint32_t>> records;  // record, tid
  bool closed = false;
  uint64_t host_end_ns = 0;     // end of the last host call of the collective (or group)
  uint64_t events_done_ns = 0;  // when its event pair was first seen complete
  uint64_t event_gpu_ns = 0;
};

class Sender {
 public:
  Sender() : cfg_(GetConfig()), id_(IdentityFromEnvironment()), start_ns_(NowNs()) {}

  void SetDevice(int device) { device_.store(device, std::memory_order_relaxed); }
  void MarkRecording() { recording_.store(true, std::memory_order_release); }

  void Run() {
    tl_internal = true;
    WarmUpCallSites();
    Outbox::Options o;
    o.autostart = cfg_.autostart;
    o.collector_bin = CollectorBin();
    o.out_dir = out_dir_ = OutDir();
    o.max_buffer_bytes = cfg_.max_buffer_bytes;
    o.spool_max_bytes = cfg_.spool_max_bytes;
    o.id = &id_;
    outbox_ = std::make_unique<Outbox>(std::move(o), [this](std::string_view token) { return HelloFrame(token); });
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      cv_.wait_for(lock, std::chrono::milliseconds(cfg_.flush_ms));
      if (stop_ || g_signal_stop.load(std::memory_order_acquire)) break;
      lock.unlock();
      Cycle(false);
      lock.lock();
    }
    lock.unlock();
    Finish();
    lock.lock();
    finished_ = true;
    g_finished.store(true, std::memory_order_release);
    cv_.notify_all();
  }

  void RequestStop() {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    cv_.notify_all();
  }

  // Waits for Finish() to complete, at most `ms`.
  void AwaitFinished(int ms) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(ms), [&] { return finished_; });
  }

 private:
  void Cycle(bool final) {
    clock_.Calibrate();
    if (cfg_.call_site_ms > 0)  // the hooks compare stamp ticks, not nanoseconds
      g_call_site_min_ticks.store(clock_.TicksIn(static_cast<uint64_t>(cfg_.call_site_ms * 1e6)),
                                  std::memory_order_relaxed);
    batch_.clear();
    batch_events_ = 0;
    batch_activities_ = 0;
    AppendBatchSeq(batch_, ++batch_seq_);
    seq_only_size_ = batch_.size();
    uint64_t settled = InFlightFloor();  // before the drain: see InFlightFloor
    ForEachRing([&](Ring& ring) {
      const uint32_t tid = ring.tid.load(std::memory_order_relaxed);
      ring.Drain([&](const Record& r) { Take(r, tid); });
    });
    Cupti().Poll(final, [&](const ActivityRecord& a) {
      kernels_.Observe(a);
      UseName(a.name_id);
      AppendActivity(batch_, a);
      ++batch_activities_;
    });
    Harvest(final);
    settled = std::min(settled, HeldCollectivesFloor());
    if (batch_events_ > 0) AppendBatchSettled(batch_, settled);
    const bool had_data = batch_events_ + batch_activities_ > 0;
    AddMetadata();
    if (recording_.load(std::memory_order_acquire)) {  // after the app's first CUDA call (issue 6)
      env_probe_.Append(batch_, NowNs());
      proc_sampler_.Append(batch_, NowNs());
    }
    AddDropped(batch_, 4);
    if (had_data || dropped_changed_ || batch_.size() > seq_only_size_) {
      events_total_ += batch_events_;
      Enqueue(kFrameBatch, batch_, batch_events_, batch_activities_);
    } else {
      --batch_seq_;  // nothing to send: the number is reused
    }
    if (!final) Heartbeat();
    Transmit(final ? cfg_.exit_timeout_ms / 2 : 0);
  }

  // Once a second: which calls each thread is inside, how far each communicator got. The
  // collector sees only calls that returned; this is how it finds a rank that hangs.
  void Heartbeat() {
    const uint64_t now = NowNs();
    if (!recording_.load(std::memory_order_acquire) || now - last_heartbeat_ns_ < 1'000'000'000ull) return;
    last_heartbeat_ns_ = now;
    std::string hb;
    AppendHeartbeatNow(hb, now);
    int listed = 0;
    ForEachRing([&](Ring& ring) {
      const uint64_t since = ring.inflight.since_ns.load(std::memory_order_acquire);
      if (since == 0 || ++listed > 64) return;
      AppendInFlight(hb, ring.inflight.api.load(std::memory_order_relaxed), clock_.ToNs(since),
                     ring.tid.load(std::memory_order_relaxed), ring.inflight.comm_id.load(std::memory_order_relaxed),
                     ring.inflight.seq.load(std::memory_order_relaxed),
                     ring.inflight.stream.load(std::memory_order_relaxed));
    });
    int comms = 0;
    for (const CommInfo* c : Communicators().All()) {
      if (++comms > 256) break;
      const uint64_t returned = c->returned.load(std::memory_order_relaxed);
      AppendCommProgress(hb, c->id, c->unique_hash, returned ? returned - 1 : 0, returned != 0);
    }
    Enqueue(static_cast<FrameField>(kFrameHeartbeat), hb, 0);
  }

  void Take(const Record& stamped, uint32_t tid) {
    Record r = stamped;
    r.t_ns = clock_.ToNs(stamped.t_ns);
    r.dur_ns = clock_.DurationNs(stamped.dur_ns);
    if (r.api == kGroupEnd) {
      Pending& p = pending_[r.event_slot];
      p.closed = true;
      p.host_end_ns = std::max(p.host_end_ns, r.t_ns + r.dur_ns);  // a group launches at its end
      return;
    }
    if (r.event_slot != 0) {
      Pending& p = pending_[r.event_slot];
      p.records.emplace_back(r, tid);
      p.host_end_ns = std::max(p.host_end_ns, r.t_ns + r.dur_ns);
      if (!(r.flags & kFlagInGroup)) p.closed = true;
      return;
    }
    if (IsSiteRecord(r))
      UseSite(r.name_id);
    else
      UseName(r.name_id);
    AppendEvent(batch_, r, tid, 0);
    ++batch_events_;
  }

  // Batch.settled_ns: no event this process sends later has an order key before it.
  // Three kinds of event go out later with an earlier start: a call still inside its hook
  // (syncs, collectives and copies mark themselves in their ring until after their record
  // is in it), a collective held here for its GPU time, and a launch or NVTX pop that
  // straddles the drain (they are short: kUntrackedCallNs covers them). Read before the
  // drain, so a call that returns during it is either in flight or already in its ring.
  static constexpr uint64_t kUntrackedCallNs = 20'000'000;
  uint64_t InFlightFloor() {
    const uint64_t now = NowNs();
    uint64_t floor = now > kUntrackedCallNs ? now - kUntrackedCallNs : 0;
    ForEachRing([&](Ring& ring) {
      const uint64_t since = ring.inflight.since_ns.load(std::memory_order_acquire);
      if (since != 0) floor = std::min(floor, clock_.ToNs(since));
    });
    return floor;
  }
  uint64_t HeldCollectivesFloor() const {
    uint64_t floor = UINT64_MAX;
    for (const auto& [slot, p] : pending_)
      for (const auto& [r, tid] : p.records) floor = std::min(floor, r.t_ns);
    for (const Pending& p : timed_)
      for (const auto& [r, tid] : p.records) floor = std::min(floor, r.t_ns);
    return floor;
  }

  static bool IsSiteRecord(const Record& r) {
    return r.api == kApiMemcpy || r.api == kApiMemcpyAsync || r.api == kApiStreamSynchronize ||
           r.api == kApiDeviceSynchronize || r.api == kApiEventSynchronize;
  }

  // A call site goes out, symbolized, with the first batch whose records use it.
  void UseSite(uint32_t id) {
    if (id == 0 || !sites_sent_.insert(id).second) return;
    CallSiteText t;
    if (DescribeCallSite(id, &t)) AppendCallSite(batch_, id, t.frames, t.python);
  }

  // A name goes out with the first batch whose records use it (see KernelNames).
  void UseName(uint32_t id) {
    if (id == 0) return;
    if (id >= name_sent_.size()) name_sent_.resize(id + 1024);  // ids are dense and bounded
    if (name_sent_[id]) return;
    name_sent_[id] = true;
    names_due_.push_back(id);
  }

  // Collectives whose events completed become wire events with their GPU time: CUPTI's
  // NCCL kernels launched during the host call when CUPTI runs (waiting up to a second for
  // its records), else the event pair. A group's time is shared among its operations in
  // proportion to their bytes.
  void Harvest(bool final) {
    // 1. Event pairs that completed: the slot goes back to the pool at once.
    for (auto it = pending_.begin(); it != pending_.end();) {
      Pending& p = it->second;
      if (!p.closed && !final) {
        ++it;
        continue;
      }
      const auto poll = p.closed ? Timer().Query(it->first, &p.event_gpu_ns) : CollectiveTimer::Poll::kFailed;
      if (poll == CollectiveTimer::Poll::kPending && !final) {
        ++it;
        continue;
      }
      Timer().Release(it->first);
      if (poll != CollectiveTimer::Poll::kDone) p.event_gpu_ns = UINT64_MAX;
      p.events_done_ns = NowNs();
      timed_.push_back(std::move(p));
      it = pending_.erase(it);
    }
    // 2. Their GPU time: CUPTI's kernels when they have arrived, else the events'.
    const bool cupti = Cupti().live();
    for (auto it = timed_.begin(); it != timed_.end();) {
      Pending& p = *it;
      uint64_t gpu_ns = p.event_gpu_ns;
      const uint64_t t0 = p.records.empty() ? 0 : p.records.front().first.t_ns;
      if (cupti && !kernels_.Lookup(t0, p.host_end_ns, &gpu_ns) && !final &&
          NowNs() - p.events_done_ns < 1'000'000'000ull) {
        ++it;  // CUPTI's records of this launch may still be in a buffer
        continue;
      }
      const auto poll = gpu_ns == UINT64_MAX ? CollectiveTimer::Poll::kFailed : CollectiveTimer::Poll::kDone;
      uint64_t total_bytes = 0;
      for (auto& [r, tid] : p.records) total_bytes += r.bytes;
      for (auto& [r, tid] : p.records) {
        Record copy = r;
        uint64_t share = 0;
        if (poll == CollectiveTimer::Poll::kDone) {
          share = total_bytes ? static_cast<uint64_t>(static_cast<double>(gpu_ns) * r.bytes / total_bytes)
                              : gpu_ns / p.records.size();
        } else {
          copy.flags |= kFlagNoGpuTime;
          ++no_gpu_time_at_exit_;
        }
        AppendEvent(batch_, copy, tid, share);
        ++batch_events_;
      }
      it = timed_.erase(it);
    }
  }

  void AddMetadata() {
    const auto source = Cupti().source();
    if (source != CuptiReader::Source::kUnknown) {
      std::string detail = Cupti().source_detail();  // changes when a profiler takes CUPTI
      if (source != source_sent_ || detail != detail_sent_) {
        AppendGpuSource(batch_, static_cast<int>(source), detail);
        source_sent_ = source;
        detail_sent_ = std::move(detail);
      }
    }
    // A frame the outbox could not keep may have carried definitions: send them again as
    // they are used (the collector takes a repeated definition as the same one).
    const uint64_t lost = outbox_->dropped_unreachable() + outbox_->dropped_spool() + outbox_->dropped_activities();
    if (lost != lost_seen_) {
      lost_seen_ = lost;
      std::fill(name_sent_.begin(), name_sent_.end(), false);
      sites_sent_.clear();  // later uses send them again
      for (uint32_t id : names_due_) name_sent_[id] = true;  // in this batch
      comms_sent_ = 0;
    }
    for (uint32_t id : names_due_) AppendKernelName(batch_, id, Kernels().Name(id));
    names_due_.clear();
    for (const CommInfo* c : Communicators().Since(comms_sent_)) {
      AppendCommunicator(batch_, c->id, c->nranks, c->rank, c->unique_hash);
      comms_sent_ = c->id;
    }
  }

  // Cumulative drop counts per reason, as field `field` of the message being built.
  void AddDropped(std::string& msg, uint32_t field) {
    uint64_t ring_full = 0;
    ForEachRing([&](Ring& r) { ring_full += r.dropped(); });
    const std::pair<const char*, uint64_t> counts[] = {
        {"ring_full", ring_full},
        {"too_many_threads", DroppedTooManyThreads()},
        {"collector_unreachable", outbox_->dropped_unreachable()},
        {"spool_full", outbox_->dropped_spool()},
        {"gpu_records_unsent", outbox_->dropped_activities()},
    };
    uint64_t sum = 0;
    for (auto& [reason, n] : counts) {
      sum += n;
      if (n != 0) AppendDropCount(msg, field, reason, n);
    }
    dropped_changed_ = sum != dropped_last_;
    dropped_last_ = sum;
  }

  void Enqueue(FrameField field, const std::string& body, uint64_t events, uint64_t activities = 0) {
    std::string frame;
    wire::enc::Frame(frame, field, body);
    outbox_->Push(std::move(frame), events, activities);
  }

  bool IdentityReady() {
    if (id_.rank_source != "none") return true;
    if (const CommInfo* c = Communicators().First()) {
      id_.rank = c->rank;
      id_.world_size = c->nranks;
      id_.rank_source = "NCCL";
      return true;
    }
    // No rank variables and no communicator yet: wait a little for NCCL to name the rank,
    // but not past a quarter of the outbox (a launch-bound process fills it in a second)
    // and not past 2 s. A process that is then still unnamed is a job of one.
    if (!finishing_ && !outbox_->filling() && NowNs() - start_ns_ < 2'000'000'000ull) return false;
    if (id_.rank < 0) {
      id_.rank = 0;
      id_.world_size = 1;
    }
    return true;
  }

  void Transmit(int wait_ms) {
    // Nothing connects before the first record, nor before the rank is known.
    outbox_->Pump(recording_.load(std::memory_order_acquire) && IdentityReady(), wait_ms);
  }

  std::string HelloFrame(std::string_view token) {
    std::string hello;
    wire::enc::Frame(hello, kFrameHello,
                     EncodeHello({&id_, device_.load(std::memory_order_relaxed), out_dir_, GPUWATCH_VERSION, start_ns_,
                                  token}));
    return hello;
  }

  void Finish() {
    finishing_ = true;  // exit or a fatal signal: the identity is what it is now
    const uint64_t deadline = NowNs() + static_cast<uint64_t>(cfg_.exit_timeout_ms) * 1000000ull;
    // Give in-flight collectives a moment to complete before giving up on their GPU time.
    const uint64_t wait_until = NowNs() + static_cast<uint64_t>(cfg_.exit_timeout_ms) * 500000ull;
    for (;;) {
      Cycle(false);
      if ((pending_.empty() && timed_.empty()) || NowNs() >= wait_until) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    Cycle(true);
    std::string goodbye;
    AddDropped(goodbye, 1);
    AppendGoodbyeTail(goodbye, events_total_, NowNs());
    Enqueue(kFrameGoodbye, goodbye, 0);
    const uint64_t now = NowNs();
    const int left = now < deadline ? static_cast<int>((deadline - now) / 1000000ull) : 0;
    Transmit(left);
    outbox_->Close();
  }

  const Config& cfg_;
  std::string out_dir_;
  Identity id_;
  std::atomic<int> device_{-1};
  std::atomic<bool> recording_{false};  // nothing connects before the first record
  const uint64_t start_ns_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool finished_ = false;
  bool finishing_ = false;  // sender thread only

  std::string batch_;  // the Batch being built this cycle
  uint64_t batch_events_ = 0;      // host events in the batch being built
  uint64_t batch_activities_ = 0;  // CUPTI records in it
  uint64_t batch_seq_ = 0;
  uint64_t last_heartbeat_ns_ = 0;
  size_t seq_only_size_ = 0;
  std::unordered_map<uint32_t, Pending> pending_;
  std::list<Pending> timed_;  // event pairs done, waiting for CUPTI's view
  CommKernelTimes kernels_;
  StampClock clock_;
  std::vector<bool> name_sent_;     // by name id
  std::unordered_set<uint32_t> sites_sent_;  // call site ids (at most 1024)
  std::vector<uint32_t> names_due_;  // used in this batch, not sent before
  uint64_t lost_seen_ = 0;
  std::string detail_sent_;           // frames' worth of drops already answered by a resend
  CuptiReader::Source source_sent_ = CuptiReader::Source::kUnknown;
  uint64_t comms_sent_ = 0;
  uint64_t events_total_ = 0;
  uint64_t no_gpu_time_at_exit_ = 0;
  uint64_t dropped_last_ = 0;
  bool dropped_changed_ = false;

  std::unique_ptr<Outbox> outbox_;
  EnvironmentProbe env_probe_;
  ProcSampler proc_sampler_{getpid()};
};

Sender* g_sender = nullptr;
std::atomic<bool> g_signal_stop{false};  // set from a signal handler: no lock may be taken there
std::atomic<bool> g_finished{false};

void* SenderMain(void*) {
  g_sender->Run();
  return nullptr;
}

}  // namespace

bool StartSender() {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (g_state.load(std::memory_order_acquire) != static_cast<int>(State::kIdle)) {
    return g_state.load(std::memory_order_acquire) == static_cast<int>(State::kRunning);
  }
  g_sender = new Sender;
  // The sender starts with every signal blocked, so a signal meant for the application is
  // never delivered to it.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 512 << 10);  // it needs little; a smaller mapping starts faster
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);  // exit waits on AwaitFinished
  pthread_t thread;
  const int rc = pthread_create(&thread, &attr, SenderMain, nullptr);
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != 0) return false;
  g_state.store(static_cast<int>(State::kRunning), std::memory_order_release);
  return true;
}

void OnFirstRecord() {
  static std::once_flag once;
  std::call_once(once, [] {
    static const auto get_device = Real<decltype(&cudaGetDevice)>("cudaGetDevice");
    int device = -1;
    tl_internal = true;  // gpuwatch's own CUDA call
    if (get_device && get_device(&device) == cudaSuccess) g_sender->SetDevice(device);
    Cupti().Start();  // no-op when already started at load
    tl_internal = false;
    std::atexit(StopSender);
    InstallExitSignalHandlers();
    g_sender->MarkRecording();
  });
}

bool FlushFromSignal(int timeout_ms) {
  if (!g_sender || g_state.load(std::memory_order_acquire) != static_cast<int>(State::kRunning)) return false;
  g_signal_stop.store(true, std::memory_order_release);
  // Only async-signal-safe calls from here: poll the sender's progress with nanosleep.
  for (int waited = 0; waited < timeout_ms && !g_finished.load(std::memory_order_acquire); ++waited) {
    timespec ms{0, 1000000};
    nanosleep(&ms, nullptr);
  }
  return g_finished.load(std::memory_order_acquire);
}

void StopSender() {
  static std::atomic<bool> once{false};
  if (g_state.load(std::memory_order_acquire) != static_cast<int>(State::kRunning)) return;
  if (!g_sender || once.exchange(true)) return;
  g_sender->RequestStop();
  g_sender->AwaitFinished(GetConfig().exit_timeout_ms + 500);
  TurnOff();
}

}  // namespace gpuwatch::inject
