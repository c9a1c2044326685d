// Ground truth of what the simulated device executed, aggregated as ops resolve.
//
// Memory stays bounded on long runs: per-kind sums are plain counters, and busy/gap
// accounting merges intervals incrementally. Ops resolve out of time order across streams,
// so intervals wait in a small buffer until the device model promises that no op resolved
// later can start before a "watermark" time; everything starting before it is merged in
// start order. The buffer therefore holds only work scheduled in the future.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "../simgpu.h"

namespace simgpu {

// Bytes the device's collectives moved over its links, each op's spread evenly over its device
// time. Ops resolve before the clock reaches them: those not over yet wait in a list that
// holds only work scheduled in the future (pruned at every add and query).
class LinkBytes {
 public:
  void add(uint64_t start, uint64_t end, uint64_t tx, uint64_t rx, uint64_t now);
  // Moved by `now`: the ops over, and the elapsed share of those running.
  void until(uint64_t now, uint64_t* tx, uint64_t* rx);
  uint64_t total_tx() const { return total_tx_; }
  uint64_t total_rx() const { return total_rx_; }

 private:
  struct Running {
    uint64_t start, end, tx, rx;
  };
  void prune(uint64_t now);
  std::vector<Running> running_;
  uint64_t done_tx_ = 0, done_rx_ = 0, total_tx_ = 0, total_rx_ = 0;
};

class Truth {
 public:
  void add(const simgpu_activity& op);
  void add_graph_launch() { graph_launches_++; }
  // What the simulated CUPTI added to calls (any thread, no lock): `lingering` while no kind
  // was enabled, the instrumentation a disable leaves until cuptiFinalize.
  void add_cupti_cost(uint64_t ns, bool lingering) { (lingering ? cupti_lingering_ns_ : cupti_added_ns_) += ns; }
  void add_cupti_finalize() { cupti_finalizes_++; }
  // A cross-stream wait on `stream` resolved: its next op waits for work that ends at `end_ns`.
  void stream_waited(uint64_t stream, uint64_t end_ns) {
    uint64_t& w = streams_[stream].awaited_end;
    w = std::max(w, end_ns);
  }

  // No op added from now on starts before `watermark`: merge what starts before it.
  void advance(uint64_t watermark);

  // Merges everything and writes DIR/device-rank-R.json; false (and errno) on failure.
  bool write(const std::string& dir, int rank);

  // Busy time merged so far, up to `now` (the open interval clipped at it).
  uint64_t busy_until(uint64_t now) const {
    const uint64_t open = open_ && now > open_start_ ? std::min(now, open_end_) - open_start_ : 0;
    return busy_ns_ + open;
  }

  LinkBytes& links() { return links_; }

  // For tests and the file: seconds of union, first-start-to-last-end, etc.
  std::string json(int rank);

 private:
  struct KindStat {
    uint64_t count = 0, bytes = 0, device_ns = 0;
  };
  // One communicator's NCCL ops on this device: the part of their device time that ran
  // while a non-NCCL kernel ran too (HTA's comm-compute overlap) and the rest (exposed).
  struct CommStat {
    uint64_t count = 0, bytes = 0, device_ns = 0, wait_ns = 0, overlapped_ns = 0;
  };
  struct Interval {
    uint64_t end;
    uint32_t kind;
    const char* comm;
  };
  struct CommOp {
    uint64_t start, end;
    const char* comm;
  };
  void merge_interval(uint64_t s, const Interval& iv);
  void settle_comm_ops(uint64_t watermark);

  KindStat kinds_[SIMGPU_KIND_COUNT];
  std::map<std::string, CommStat> comms_;       // by the communicator's members ("0,2")
  std::deque<std::pair<uint64_t, uint64_t>> compute_;  // merged non-NCCL kernel spans, start order
  std::vector<CommOp> comm_pending_;            // merged in, overlap not known yet
  uint64_t comm_ns_ = 0, comm_overlapped_ns_ = 0;
  std::multimap<uint64_t, Interval> buffered_;  // start -> op, not yet merged
  bool open_ = false;                           // a merged busy interval is open
  uint64_t open_start_ = 0, open_end_ = 0;
  uint64_t busy_ns_ = 0, gap_count_ = 0, gap_ns_ = 0;
  uint64_t first_start_ = UINT64_MAX, last_end_ = 0;
  uint64_t wait_ns_ = 0, ops_ = 0;
  // Work run by graph launches, counted apart too (it is also in kinds_).
  uint64_t graph_launches_ = 0, graph_kernels_ = 0, graph_ops_ = 0, graph_ns_ = 0;
  // Kernels (not collectives) by their grid's block count, and the SM time they left idle:
  // each kernel's time times the share of the sm_count SMs its grid gave no block.
  std::map<uint64_t, uint64_t> kernel_blocks_;  // blocks -> kernels (bounded by what scenarios launch)
  double kernel_sm_idle_ns_ = 0;
  // Per stream, in its ops' order (a stream's ops resolve in order): its busy time, and the
  // part of the gaps between its ops spent waiting for another stream's work (from the gap's
  // start until the awaited work ended; the collector's `stream_wait`).
  struct StreamStat {
    uint64_t ops = 0, busy_ns = 0, stream_wait_ns = 0, last_end = 0, awaited_end = 0;
  };
  std::map<uint64_t, StreamStat> streams_;
  LinkBytes links_;
  std::atomic<uint64_t> cupti_added_ns_{0}, cupti_lingering_ns_{0}, cupti_finalizes_{0};
};

}  // namespace simgpu
