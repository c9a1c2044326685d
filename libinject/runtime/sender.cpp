// The sender thread: its loop, the heartbeat, Hello and Goodbye, and starting and stopping it.
#include "runtime/sender.h"

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "assemble/assembler.h"
#include "enrich/cupti_budget.h"
#include "enrich/cupti_reader.h"
#include "enrich/environment_probe.h"
#include "enrich/nvml_sampler.h"
#include "enrich/host_sampler.h"
#include "enrich/native_frame_names.h"
#include "enrich/proc_sampler.h"
#include "record/call_sites.h"
#include "record/collective_timer.h"
#include "record/real.h"
#include "record/recorder.h"
#include "record/registry.h"
#include "record/stamp_clock.h"
#include "runtime/config.h"
#include "runtime/signals.h"
#include "transport/encode.h"
#include "transport/identity.h"
#include "transport/outbox.h"
#include "transport/wire_fields.h"
#include "contention.h"
#include "wire_encode.h"

namespace gpuwatch::inject {
namespace {

extern std::atomic<bool> g_signal_stop;
extern std::atomic<bool> g_finished;

// The cores the job may use (its affinity); 0: unknown.
size_t JobCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  return static_cast<size_t>(CPU_COUNT(&set));
}

class Sender {
 public:
  Sender()
      : cfg_(GetConfig()),
        id_(IdentityFromEnvironment()),
        start_ns_(NowNs()),
        assembler_(Assembler::Sources{&clock_, &Timer()}) {}

  void SetDevice(int device) { device_.store(device, std::memory_order_relaxed); }
  void MarkRecording() { recording_.store(true, std::memory_order_release); }

  void Run() {
    tl_internal = true;
    if (pthread_getcpuclockid(pthread_self(), &sender_clock_) != 0) sender_clock_ = CLOCK_THREAD_CPUTIME_ID;
    WarmUpCallSites();
    // What a hooked call costs here, timed before the application's calls are counted.
    CuptiBudget::Options b;
    b.mode = cfg_.cupti_mode;
    b.budget = cfg_.overhead;
    b.contended = cfg_.overhead_contended;
    b.hook_ns = MeasureHookNs();
    if (cfg_.record_to_s > cfg_.record_from_s) {
      b.record_from_ns = start_ns_ + static_cast<uint64_t>(cfg_.record_from_s * 1e9);
      b.record_to_ns = start_ns_ + static_cast<uint64_t>(cfg_.record_to_s * 1e9);
    }
    budget_ = std::make_unique<CuptiBudget>(b, start_ns_);
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
    // 5 us: a hook's own work takes well under 1 us unless it captured its call site (the
    // probe allows those more); one interrupt caught among the ~600 samples of a 3 s
    // launch loop once moved the mean from ~30 to 220 ns.
    g_hook_cost_max_ticks.store(clock_.TicksIn(5'000), std::memory_order_relaxed);
    g_run_gap_ticks.store(clock_.TicksIn(kRunGapNs), std::memory_order_relaxed);
    g_run_max_ticks.store(clock_.TicksIn(kRunMaxNs), std::memory_order_relaxed);
    g_launch_stall_ticks.store(clock_.TicksIn(LaunchTimes::kStallNs), std::memory_order_relaxed);
    CollectRings(rings_);
    Assembler::Cycle in;
    in.final = final;
    in.now_ticks = Stamp();
    in.run_quiet_ticks = clock_.TicksIn(kRunGapNs);
    in.cupti_live = Cupti().live();
    in.gpu_source = static_cast<int>(Cupti().source());
    const std::string detail = in.gpu_source != 0 ? Cupti().source_detail() : std::string();
    in.gpu_source_detail = detail;
    in.drops = OtherDrops();
    in.cupti_linger = Cupti().lingering();
    in.cupti_recorded = Cupti().recorded_span();
    in.poll_activities = [final](const CuptiBudget::Cycle& drained,
                                 const std::function<void(const ActivityRecord&)>& take) {
      Cupti().NoteDrainedCalls(drained.queue_drained_ns, drained.recorded_enqueue_ns);
      Cupti().Poll(final, take);
    };
    in.append_samples = [this, final](std::string& batch, const CuptiBudget::Cycle& drained) {
      if (!recording_.load(std::memory_order_acquire)) return;  // after the app's first CUDA call
      if (env_probe_.Probe(NowNs(), device_.load(std::memory_order_relaxed))) AppendEnvironment(batch, env_probe_.info());
      if (auto sample = proc_sampler_.SampleIfDue(NowNs())) {
        const CgroupCpuStat cg = env_probe_.CgroupStat();
        sample->cgroup_periods = cg.nr_periods;
        sample->cgroup_throttled_periods = cg.nr_throttled;
        sample->cgroup_throttled_ns = cg.throttled_ns;
        AppendProcSample(batch, *sample);
        NoteContention(*sample);
      }
      const EnvironmentInfo& env = env_probe_.info();
      if (auto dev = nvml_sampler_.SampleIfDue(NowNs(), final, env.device_pci_bus_id, device_.load(std::memory_order_relaxed)))
        AppendDeviceSample(batch, *dev);
      if (const std::string why = nvml_sampler_.TakeDetail(); !why.empty()) AppendDeviceSamplerDetail(batch, why);
      AppendHostSamples(batch, final);
      UpdateBudget(drained);
      AppendBudget(batch, final);
    };
    const Assembler::Batch& b = assembler_.AssembleBatch(rings_, in);
    if (b.worth_sending) {
      events_total_ += b.events;
      Enqueue(field::frame::kBatch, b.body, b.events, b.activities);
    }
    if (!final) Heartbeat();
    Transmit(0);  // the exit's wait is Finish's Drain, after the Goodbye
  }

  // The host sampler's samples since the last cycle, their stacks' definitions first, and
  // its totals when they changed. Native samples are named here (enrich/native_frame_names.h)
  // and merged with the Python ones in time order (the collector's join expects it).
  void AppendHostSamples(std::string& batch, bool final) {
    Sampler().Drain(host_samples_);
    Sampler().DrainNative(native_samples_);
    named_samples_.clear();
    for (const HostSampler::NativeSample& s : native_samples_)
      named_samples_.push_back({s.t_ns, s.tid, NativeNames().StackOf(s), s.in_cuda});
    merged_samples_.clear();
    std::merge(host_samples_.begin(), host_samples_.end(), named_samples_.begin(), named_samples_.end(),
               std::back_inserter(merged_samples_),
               [](const HostSampler::Sample& a, const HostSampler::Sample& b) { return a.t_ns < b.t_ns; });
    for (const HostSampler::Sample& s : merged_samples_) assembler_.UseStack(s.stack_id, batch);
    for (const HostSampler::Sample& s : merged_samples_) AppendHostSample(batch, s.t_ns, s.tid, s.stack_id, s.in_cuda);
    const HostSampler::Totals t = Sampler().totals();
    if (t.hz > 0 && (final || t.samples != sampling_sent_.samples || t.dropped != sampling_sent_.dropped)) {
      AppendHostSampling(batch, t);
      sampling_sent_ = t;
    }
  }

  // The overhead budget: this cycle's counts in, CUPTI's records on or off from now. The
  // records drained were all made before now, so a window opened now covers none of them.
  // Collectives go without their event pair only while CUPTI's kernels time them: the flag
  // goes down before CUPTI stops and up after it starts.
  void UpdateBudget(const CuptiBudget::Cycle& drained) {
    CuptiBudget::Cycle c = drained;
    c.now_ns = NowNs();
    const HostSampler::Totals sampling = Sampler().totals();
    c.sampler_ns = sampling.cost_ns();  // its thread's and its signals' cost count in the budget
    c.startup_ns = StartupNs();
    c.cupti_gone = Cupti().gone();
    // Read after the drain, as the windows are decided: a drained call made after it finds it.
    cupti_ended_ns_ = Cupti().ended_ns();
    c.cupti_ended_ns = cupti_ended_ns_;
    const CuptiReader::DetachCounts detached = Cupti().detach_counts();
    c.cupti_detaches = detached.detaches;
    c.cupti_detach_ns = detached.detach_ns;
    const HookCostSums own = SumHookCosts(rings_);
    if (own.samples > 0) {
      c.hook_ns = static_cast<double>(clock_.DurationNs(own.ticks)) / static_cast<double>(own.samples);
      c.hook_samples = own.samples;
    }
    c.stretch = contention_.Stretch();
    c.busy_share = contention_.BusyShare();
    c.beside_ns = beside_ns_;
    c.cpus = job_cpus_;
    const bool open = budget_->Update(c);
    Sampler().SetBudgetSpent(budget_->spent());
    if (!open) Timer().SetCuptiTimes(false);
    // Launches are records while CUPTI records (their kernels are joined to them), else
    // summarized (record/launch_summary.h): the flag goes up before CUPTI starts and down
    // after it stopped, so every launch CUPTI records is a record.
    if (open) g_itemize_launches.store(true, std::memory_order_release);
    Cupti().SetRecording(open);
    if ((!open || Cupti().gone()) && cfg_.summarize_launches) g_itemize_launches.store(false, std::memory_order_release);
    Timer().SetCuptiTimes(open && Cupti().RecordsKernels());
  }

  // The windows that closed, the open one, and the cost so far (every 100 ms, at once when
  // a window opened or closed, and in the last batch), into the batch being built.
  void AppendBudget(std::string& batch, bool final) {
    auto closed = budget_->TakeClosedWindows();
    const uint64_t open_since = budget_->open_since_ns();
    const uint64_t now = NowNs();
    const uint64_t ended = cupti_ended_ns_ != ended_sent_ ? cupti_ended_ns_ : 0;
    if (!final && closed.empty() && open_since == open_since_sent_ && !ended && now - budget_sent_ns_ < 100'000'000ull)
      return;
    AppendCuptiWindows(batch, closed, open_since, ended);
    ended_sent_ = cupti_ended_ns_;
    AppendOverhead(batch, budget_->figures(), Cupti().hw_trace(), SenderCpuNs());
    open_since_sent_ = open_since;
    budget_sent_ns_ = now;
  }

  // The sender thread's CPU so far (whichever thread flushes).
  uint64_t SenderCpuNs() const {
    timespec cpu{};
    if (clock_gettime(sender_clock_, &cpu) != 0) return 0;
    return static_cast<uint64_t>(cpu.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(cpu.tv_nsec);
  }

  // Whether the job's cores are busy, for the budget (proto/contention.h): the process tree's
  // CPU and run-queue wait between two samples, and the CPU beside the job (the sender's and
  // that of the collector the rank started), read with each sample.
  void NoteContention(const ProcTotals& t) {
    const auto up = [](uint64_t now, uint64_t before) { return now > before ? static_cast<double>(now - before) : 0.0; };
    if (proc_prev_.t_ns > 0 && t.t_ns > proc_prev_.t_ns)
      contention_.Add(static_cast<double>(t.t_ns - proc_prev_.t_ns), up(t.cpu_ns, proc_prev_.cpu_ns),
                      up(t.run_wait_ns, proc_prev_.run_wait_ns));
    proc_prev_ = t;
    collector_cpu_ns_ = std::max(collector_cpu_ns_, t.collector_cpu_ns);
    beside_ns_ = SenderCpuNs() + collector_cpu_ns_;
  }

  // Every drop count but ring_full (the assembler counts that in the rings).
  DropCounts OtherDrops() const {
    DropCounts d;
    d.too_many_threads = DroppedTooManyThreads();
    d.collector_unreachable = outbox_->dropped_unreachable();
    d.spool_full = outbox_->dropped_spool();
    d.gpu_records_unsent = outbox_->dropped_activities();
    d.gpu_records_incomplete = Cupti().detach_counts().incomplete_records;
    return d;
  }

  // Once a second: which calls each thread is inside, how far each communicator got. The
  // collector sees only calls that returned; this is how it finds a rank that hangs.
  void Heartbeat() {
    const uint64_t now = NowNs();
    if (!recording_.load(std::memory_order_acquire) || now - last_heartbeat_ns_ < 1'000'000'000ull) return;
    last_heartbeat_ns_ = now;
    CollectRings(rings_);
    std::string hb;
    AppendHeartbeatNow(hb, now);
    int listed = 0;
    for (const Ring* ring : rings_) {
      const uint64_t since = ring->inflight.since_ticks.load(std::memory_order_acquire);
      if (since == 0 || ++listed > 64) continue;
      AppendInFlight(hb, ring->inflight.api.load(std::memory_order_relaxed), clock_.ToNs(since),
                     ring->tid.load(std::memory_order_relaxed), ring->inflight.comm_id.load(std::memory_order_relaxed),
                     ring->inflight.seq.load(std::memory_order_relaxed),
                     ring->inflight.stream.load(std::memory_order_relaxed));
    }
    int comms = 0;
    for (const CommInfo* c : Communicators().All()) {
      if (++comms > 256) break;
      const uint64_t returned = c->returned.load(std::memory_order_relaxed);
      AppendCommProgress(hb, c->id, c->unique_hash, returned ? returned - 1 : 0, returned != 0);
    }
    Enqueue(field::frame::kHeartbeat, hb, 0);
  }

  void Enqueue(uint32_t frame_field, const std::string& body, uint64_t events, uint64_t activities = 0) {
    std::string frame;
    wire::enc::Frame(frame, frame_field, body);
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
    wire::enc::Frame(hello, field::frame::kHello,
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
      if (!assembler_.holding_collectives() || NowNs() >= wait_until) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    Cycle(true);
    std::string goodbye;
    CollectRings(rings_);
    AppendDropCounts(goodbye, field::goodbye::kDropped, Assembler::CountDrops(rings_, OtherDrops()));
    AppendGoodbyeTail(goodbye, events_total_, NowNs());
    Enqueue(field::frame::kGoodbye, goodbye, 0);
    const uint64_t now = NowNs();
    const int left = now < deadline ? static_cast<int>((deadline - now) / 1000000ull) : 0;
    outbox_->Drain(recording_.load(std::memory_order_acquire) && IdentityReady(), left);
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

  StampClock clock_;
  Assembler assembler_;
  std::unique_ptr<CuptiBudget> budget_;
  clockid_t sender_clock_ = CLOCK_THREAD_CPUTIME_ID;
  uint64_t open_since_sent_ = UINT64_MAX, budget_sent_ns_ = 0;
  uint64_t cupti_ended_ns_ = 0, ended_sent_ = 0;  // CuptiReader::ended_ns, as read and as sent
  std::vector<Ring*> rings_;  // every thread's, as of the last CollectRings
  uint64_t last_heartbeat_ns_ = 0;
  uint64_t events_total_ = 0;
  std::unique_ptr<Outbox> outbox_;
  EnvironmentProbe env_probe_;
  ProcSampler proc_sampler_{getpid()};
  ProcTotals proc_prev_;
  wire::ContentionTally contention_;
  uint64_t collector_cpu_ns_ = 0, beside_ns_ = 0;
  const size_t job_cpus_ = JobCpus();
  NvmlSampler nvml_sampler_{static_cast<uint64_t>(cfg_.nvml_ms) * 1'000'000};
  std::vector<HostSampler::Sample> host_samples_;  // reused each cycle
  std::vector<HostSampler::NativeSample> native_samples_;
  std::vector<HostSampler::Sample> named_samples_, merged_samples_;
  HostSampler::Totals sampling_sent_;
};

Sender* g_sender = nullptr;
std::atomic<bool> g_signal_stop{false};  // set from a signal handler: no lock may be taken there
std::atomic<bool> g_finished{false};
std::atomic<pid_t> g_sender_pid{0};  // the process the sender thread runs in

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
  if (GetConfig().disabled) return false;
  g_sender_pid.store(getpid(), std::memory_order_relaxed);
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
  MarkRunning();
  return true;
}

void OnFirstRecord() {
  static std::once_flag once;
  std::call_once(once, [] {
    static const auto get_device = Real<decltype(&cudaGetDevice)>("cudaGetDevice");
    int device = -1;
    tl_internal = true;  // gpuwatch's own CUDA call
    if (get_device && get_device(&device) == cudaSuccess) g_sender->SetDevice(device);
    g_itemize_launches.store(true, std::memory_order_release);  // CUPTI records from its start
    Cupti().Start();  // no-op when already started at load
    tl_internal = false;
    std::atexit(StopSender);
    // After the first CUDA call: Python is up by now. Half the overhead budget at most.
    Sampler().Start(GetConfig().sample_hz, GetConfig().overhead / 2, GetConfig().native_frames);
    InstallExitSignalHandlers();
    g_sender->MarkRecording();
  });
}

bool FlushFromSignal(int timeout_ms) {
  if (!g_sender || g_state.load(std::memory_order_acquire) != static_cast<int>(State::kRunning)) return false;
  // A vfork()ed child shares the parent's memory until it execs or _exits: what it sees is the
  // parent's sender, which it must not stop.
  if (getpid() != g_sender_pid.load(std::memory_order_relaxed)) return false;
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
