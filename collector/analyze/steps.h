// Diagnosis, part 1 (issue 6): what one rank did, step by step. RankDiag holds every
// measured figure the findings need; StepsCollector fills it from the rank's batches.
// findings.h turns RankDiags into findings. Memory is bounded by the limits in
// thresholds.h (steps, anchors, collective calls, the device timeline's windows).
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

#include "analyze/environment.h"
#include "analyze/fifo.h"
#include "analyze/input_io.h"
#include "analyze/step_pattern.h"
#include "analyze/step_stats.h"
#include "analyze/steps_timeline.h"
#include "gpuwatch.pb.h"

namespace gpuwatch::collector::diag {

// Host-blocking calls by kind, for naming the API of a sync stall.
enum SyncKind { kSyncStream = 0, kSyncDevice = 1, kSyncEvent = 2, kSyncSmallCopy = 3, kSyncKinds = 4 };
const char* SyncKindName(int k);

struct CollCall {
  uint64_t hash, seq, t_ns, gpu_ns;
};

inline constexpr size_t kMaxSitesShown = 5;

// Where syncs and blocking copies that blocked long were called from (libinject/call_sites.h).
struct SiteStat {
  std::string python;               // "train.py:42 in step", or empty
  std::vector<std::string> frames;  // native, innermost first
  uint64_t ns = 0, count = 0;       // host time blocked there, calls
};

struct RankDiag {
  int rank = -1;
  std::vector<SiteStat> sites;  // the call sites that blocked longest, at most kMaxSitesShown
  std::string host;
  // Steps.
  std::string step_source = "none";  // "nvtx:<name>", "inferred:collectives", "inferred:syncs", "none"
  std::deque<StepRec> steps;         // the first kMaxSteps, in time order
  uint64_t steps_total = 0;
  StepStats step_stats;              // every step's duration, kept in `steps` or not
  bool per_step_device = false;      // steps carry device figures (NVTX steps)
  // Device (CUPTI) over the whole run.
  bool cupti = false;
  DeviceSlice dev;
  uint64_t dev_first = 0, dev_last = 0;
  uint64_t kernels = 0, kernels_with_api = 0, kernels_short = 0;
  // Host.
  uint64_t host_first = 0, host_last = 0;
  uint64_t launches = 0, launch_ns = 0;
  uint64_t sync_count = 0, sync_ns = 0;                    // every host-blocking call
  uint64_t sync_mid_ns[kSyncKinds] = {}, sync_mid_count[kSyncKinds] = {};  // followed by work in the step
  uint64_t pageable_count = 0, pageable_bytes = 0, pageable_ns = 0;  // pageable copies > kSmallCopyBytes
  uint64_t blocking_count = 0, blocking_bytes = 0, blocking_ns = 0;  // other blocking copies > kSmallCopyBytes
  // Collectives.
  uint64_t coll_count = 0, coll_bytes = 0, coll_timed = 0, coll_gpu_ns = 0;
  double coll_bus_bytes = 0;  // sum of S x bus factor over timed calls
  // A sample of the calls for matching across ranks: those whose sequence number is a
  // multiple of coll_stride. The stride doubles whenever kMaxCollCalls are kept, so the
  // sample covers the whole run and every rank keeps the same calls of a communicator.
  std::vector<CollCall> colls;
  uint64_t coll_stride = 1;
  // Environment and the process tree during host-wait gaps (issue 6).
  EnvFacts env;
  InputIoFigures io;

  double ActiveS() const;       // device active span, else host span
  double StepMedianS() const;   // 0 without steps
  // Over every step: exact while `steps` holds them all, else from step_stats.
  uint64_t StepPercentileNs(double p) const;
  uint64_t StepMaxNs() const;
  double StepsTotalS() const;
  uint64_t SyncMidNs() const;
};

// The ranks of a job, by reference: the job's merge points at each rank's own result
// instead of copying its per-step records (up to kMaxSteps each).
class RankList {
 public:
  RankList() = default;
  RankList(const std::vector<RankDiag>& v) {  // NOLINT: implicit, for callers with values
    for (const auto& d : v) p_.push_back(&d);
  }
  void push_back(const RankDiag* d) { p_.push_back(d); }
  size_t size() const { return p_.size(); }
  bool empty() const { return p_.empty(); }
  const RankDiag& operator[](size_t i) const { return *p_[i]; }
  struct Iter {
    const RankDiag* const* p;
    const RankDiag& operator*() const { return **p; }
    const RankDiag* operator->() const { return *p; }
    Iter& operator++() { return ++p, *this; }
    bool operator!=(const Iter& o) const { return p != o.p; }
  };
  Iter begin() const { return {p_.data()}; }
  Iter end() const { return {p_.data() + p_.size()}; }

 private:
  std::vector<const RankDiag*> p_;
};

// Step durations (ns) of a RankDiag, and nearest-rank percentiles of them.
std::vector<uint64_t> StepDurations(const RankDiag& d);
uint64_t Percentile(std::vector<uint64_t> v, double p);

// The fields of a host event the step analysis reads, held compactly while events wait to
// be put in time order: a protobuf Event is several times larger and slow to copy (the
// copies were most of the collector's ingest time in a profile of ingest_bench).
class HostEvent {
 public:
  HostEvent() = default;
  explicit HostEvent(const wire::Event& e)
      : t_(e.t_ns()), dur_(e.dur_ns()), bytes_(e.bytes()), comm_(e.comm_id()), gpu_(e.gpu_ns()), seq_(e.seq()),
        count_(1), name_(e.name_id()), flags_(e.flags()), api_(e.api()), copy_(e.copy_kind()) {}
  wire::Api api() const { return static_cast<wire::Api>(api_); }
  wire::CopyKind copy_kind() const { return static_cast<wire::CopyKind>(copy_); }
  uint64_t t_ns() const { return t_; }
  uint64_t dur_ns() const { return dur_; }
  uint64_t bytes() const { return bytes_; }
  uint64_t comm_id() const { return comm_; }
  uint64_t gpu_ns() const { return gpu_; }
  uint64_t seq() const { return seq_; }
  uint32_t name_id() const { return name_; }
  uint32_t flags() const { return flags_; }
  // Kernel launches back to back wait as one run (the bulk of a launch-bound job's events).
  uint64_t count() const { return count_; }
  void Absorb(const HostEvent& launch) {
    dur_ += launch.dur_;
    ++count_;
  }

 private:
  // No default member initializers: the held queue's slots stay untouched memory until used.
  uint64_t t_, dur_, bytes_, comm_, gpu_, seq_;
  uint64_t count_;
  uint32_t name_, flags_;
  int32_t api_, copy_;
};

class StepsCollector {
 public:
  StepsCollector();
  StepsCollector(const StepsCollector& o);
  StepsCollector& operator=(const StepsCollector&) = delete;
  void OnHello(const wire::Hello& h);
  void OnBatch(const wire::Batch& b);
  // The process said goodbye: nothing more is coming that could go before what is held,
  // so that is processed now, in place (and Result() has no held events to copy).
  void OnGoodbye();
  // The rank's figures as if it ended now (flushes a copy of the timeline; infers steps
  // from the pattern of collectives or syncs when there were no NVTX steps).
  // Valid until the next OnBatch (computed once per state).
  const RankDiag& Result() const;
  // Host events waiting to be put in time order.
  size_t held() const { return in_order_.size() + late_.size(); }

 private:
  struct Held {
    uint64_t key;
    HostEvent e;
    bool operator>(const Held& o) const { return key > o.key; }
  };
  bool IsStepName(const std::string& n) const;
  RankDiag Compute() const;
  RankDiag ComputeSteps() const;
  RankDiag ComputeReleased() const;  // ComputeSteps once nothing is held
  void OnRange(const HostEvent& e);
  void Process(const HostEvent& e);
  void ThinCollSample();
  void Release(bool all);

  RankDiag d_;
  InputIo io_;  // fed by tl_'s host-wait gaps and the batches' process samples
  std::unique_ptr<StepTimeline> tl_;
  std::string step_range_;                            // GPUWATCH_STEP_RANGE
  std::unordered_map<uint32_t, std::string> names_;   // step-like range names by id (bounded)
  uint32_t step_name_id_ = 0;
  uint64_t step_depth_ = UINT64_MAX;
  uint64_t pending_[kSyncKinds] = {}, pending_n_[kSyncKinds] = {};
  uint64_t cur_mid_ = 0, cur_mid_n_ = 0;
  std::unordered_map<uint64_t, std::pair<int, uint64_t>> comms_;  // comm_id -> (nranks, hash)
  StepPattern coll_pattern_, sync_pattern_;  // steps without NVTX
  // Host events wait here to be processed in time order: the library sends a collective
  // only once its GPU time is known, after the syncs that followed it. Nearly everything
  // arrives in order, so it waits in a FIFO (O(1)); only what arrives late goes to a heap.
  void Hold(Held h);
  Fifo<Held> in_order_;  // keys never decrease
  std::priority_queue<Held, std::vector<Held>, std::greater<Held>> late_;
  uint64_t newest_host_ = 0;
  uint64_t settled_ = 0;  // the newest Batch.settled_ns
  std::unordered_map<uint32_t, SiteStat> sites_;  // by call site id, bounded
  uint64_t batches_ = 0;
  mutable std::optional<RankDiag> cached_;  // Result() of the state after batches_ batches
  mutable uint64_t cached_batches_ = 0;
};

}  // namespace gpuwatch::collector::diag
