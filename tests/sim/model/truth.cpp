#include "truth.h"

#include <cstdio>
#include <sstream>

#include "config.h"
#include "memory.h"

namespace simgpu {

void Truth::add(const simgpu_activity& op) {
  if (op.kind >= SIMGPU_KIND_COUNT) return;
  KindStat& k = kinds_[op.kind];
  k.count++;
  k.bytes += op.bytes;
  k.device_ns += op.end_ns - op.start_ns;
  wait_ns_ += op.wait_ns;
  ops_++;
  if (op.graph_id) {
    graph_ops_++;
    graph_kernels_ += op.kind == SIMGPU_KERNEL;
    graph_ns_ += op.end_ns - op.start_ns;
  }
  if (op.comm) {
    CommStat& c = comms_[op.comm];
    c.count++;
    c.bytes += op.bytes;
    c.device_ns += op.end_ns - op.start_ns;
    c.wait_ns += op.wait_ns;
  }
  if (op.kind == SIMGPU_KERNEL && op.geometry.grid_x) {
    const simgpu_launch_geometry& g = op.geometry;
    const uint64_t blocks = uint64_t{g.grid_x} * g.grid_y * g.grid_z;
    if (kernel_blocks_.size() < 64 || kernel_blocks_.count(blocks)) kernel_blocks_[blocks]++;
    const double sms = config().sm_count;
    if (sms > 0 && blocks < sms) kernel_sm_idle_ns_ += static_cast<double>(op.end_ns - op.start_ns) * (1 - blocks / sms);
  }
  StreamStat& st = streams_[op.stream_id];
  if (st.ops && op.start_ns > st.last_end && st.awaited_end > st.last_end)
    st.stream_wait_ns += std::min(op.start_ns, st.awaited_end) - st.last_end;
  st.awaited_end = 0;
  if (op.end_ns > std::max(op.start_ns, st.last_end)) st.busy_ns += op.end_ns - std::max(op.start_ns, st.last_end);
  st.last_end = std::max(st.last_end, op.end_ns);
  st.ops++;
  if (op.start_ns < first_start_) first_start_ = op.start_ns;
  if (op.end_ns > last_end_) last_end_ = op.end_ns;
  buffered_.emplace(op.start_ns, Interval{op.end_ns, op.kind, op.comm});
}

void LinkBytes::add(uint64_t start, uint64_t end, uint64_t tx, uint64_t rx, uint64_t now) {
  total_tx_ += tx;
  total_rx_ += rx;
  running_.push_back(Running{start, std::max(start, end), tx, rx});
  prune(now);
}

void LinkBytes::prune(uint64_t now) {
  for (size_t i = 0; i < running_.size();) {
    if (running_[i].end > now) {
      ++i;
      continue;
    }
    done_tx_ += running_[i].tx;
    done_rx_ += running_[i].rx;
    running_[i] = running_.back();
    running_.pop_back();
  }
}

void LinkBytes::until(uint64_t now, uint64_t* tx, uint64_t* rx) {
  prune(now);
  double t = static_cast<double>(done_tx_), r = static_cast<double>(done_rx_);
  for (const Running& op : running_)
    if (now > op.start) {
      const double share = static_cast<double>(now - op.start) / static_cast<double>(op.end - op.start);
      t += share * static_cast<double>(op.tx);
      r += share * static_cast<double>(op.rx);
    }
  *tx = static_cast<uint64_t>(t);
  *rx = static_cast<uint64_t>(r);
}

static bool is_nccl(uint32_t kind) { return kind >= SIMGPU_ALLREDUCE && kind <= SIMGPU_RECV; }

void Truth::advance(uint64_t watermark) {
  while (!buffered_.empty() && buffered_.begin()->first < watermark) {
    auto [s, iv] = *buffered_.begin();
    buffered_.erase(buffered_.begin());
    merge_interval(s, iv);
  }
  settle_comm_ops(watermark);
}

// Ops arrive here in start order: compute kernels extend the merged compute spans, NCCL ops
// wait until every compute kernel that could overlap them is merged.
void Truth::merge_interval(uint64_t s, const Interval& iv) {
  const uint64_t e = iv.end;
  if (iv.kind == SIMGPU_KERNEL) {
    if (!compute_.empty() && s <= compute_.back().second)
      compute_.back().second = std::max(compute_.back().second, e);
    else
      compute_.emplace_back(s, e);
  } else if (is_nccl(iv.kind)) {
    comm_pending_.push_back(CommOp{s, e, iv.comm});
  }
  if (open_ && s <= open_end_) {  // overlaps or touches the open interval: extend it
    if (e > open_end_) open_end_ = e;
    return;
  }
  if (open_) {  // the device was idle from open_end_ to s
    busy_ns_ += open_end_ - open_start_;
    gap_count_++;
    gap_ns_ += s - open_end_;
  }
  open_ = true;
  open_start_ = s;
  open_end_ = e;
}

// NCCL ops that end by the watermark: every kernel that starts before their end is merged.
// Compute spans no pending or later op can reach are dropped (memory stays bounded).
void Truth::settle_comm_ops(uint64_t watermark) {
  uint64_t keep_from = watermark;
  std::vector<CommOp> still;
  for (const CommOp& op : comm_pending_) {
    if (op.end > watermark) {
      still.push_back(op);
      keep_from = std::min(keep_from, op.start);
      continue;
    }
    uint64_t overlapped = 0;
    for (const auto& [cs, ce] : compute_) {
      if (cs >= op.end) break;
      const uint64_t lo = std::max(cs, op.start), hi = std::min(ce, op.end);
      if (hi > lo) overlapped += hi - lo;
    }
    comm_ns_ += op.end - op.start;
    comm_overlapped_ns_ += overlapped;
    if (op.comm) comms_[op.comm].overlapped_ns += overlapped;
  }
  comm_pending_.swap(still);
  while (!compute_.empty() && compute_.front().second <= keep_from) compute_.pop_front();
}

std::string Truth::json(int rank) {
  advance(UINT64_MAX);
  uint64_t busy = busy_ns_ + (open_ ? open_end_ - open_start_ : 0);
  uint64_t active = ops_ ? last_end_ - first_start_ : 0;
  auto sec = [](uint64_t ns) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.9f", static_cast<double>(ns) * 1e-9);
    return std::string(buf);
  };
  std::ostringstream o;
  o << "{\"rank\": " << rank << ", \"busy_s\": " << sec(busy) << ", \"active_s\": " << sec(active)
    << ", \"gaps\": {\"count\": " << gap_count_ << ", \"total_s\": " << sec(gap_ns_) << "}"
    << ", \"kinds\": {";
  bool first = true;
  for (int i = 0; i < SIMGPU_KIND_COUNT; ++i) {
    if (!kinds_[i].count) continue;
    o << (first ? "" : ", ") << "\"" << simgpu_kind_name(i) << "\": {\"count\": " << kinds_[i].count
      << ", \"bytes\": " << kinds_[i].bytes << ", \"device_s\": " << sec(kinds_[i].device_ns) << "}";
    first = false;
  }
  o << "}, \"graphs\": {\"launches\": " << graph_launches_ << ", \"kernels\": " << graph_kernels_
    << ", \"ops\": " << graph_ops_ << ", \"device_s\": " << sec(graph_ns_) << "}";
  o << ", \"cupti\": {\"added_s\": " << sec(cupti_added_ns_.load() + cupti_lingering_ns_.load())
    << ", \"lingering_s\": " << sec(cupti_lingering_ns_.load()) << ", \"finalizes\": " << cupti_finalizes_.load() << "}";
  o << ", \"kernel_geometry\": {\"sm_idle_s\": " << sec(static_cast<uint64_t>(kernel_sm_idle_ns_ + 0.5))
    << ", \"blocks\": {";
  bool first_blocks = true;
  for (const auto& [blocks, n] : kernel_blocks_) {
    o << (first_blocks ? "" : ", ") << "\"" << blocks << "\": " << n;
    first_blocks = false;
  }
  o << "}, \"registers_per_thread\": " << SIMGPU_REGISTERS_PER_THREAD << "}";
  const MemoryMap::DeviceUse mem = MemoryMap::get().device_use();
  o << ", \"memory\": {\"peak_bytes\": " << mem.peak << ", \"total_bytes\": " << config().memory_bytes()
    << ", \"allocations\": " << mem.allocations << "}";
  // The device state as configured: what the simulated NVML reports.
  const Config& c = config();
  static const char* const kThrottle[] = {"none", "power", "thermal"};
  o << ", \"device\": {\"sm_count\": " << c.sm_count << ", \"pcie_gen\": " << c.pcie_gen
    << ", \"pcie_width\": " << c.pcie_width << ", \"pcie_gen_max\": 5, \"pcie_width_max\": 16"
    << ", \"numa_node\": " << c.numa_node << ", \"nvlink_links\": " << c.nvlink_links
    << ", \"nvlink_tx_bytes\": " << (c.nvlink_links > 0 ? links_.total_tx() : 0)
    << ", \"nvlink_rx_bytes\": " << (c.nvlink_links > 0 ? links_.total_rx() : 0) << ", \"nvlink_version\": \"" << (c.nvlink_links > 0 ? "4.0" : "") << "\""
    << ", \"throttle\": \"" << kThrottle[c.throttle] << "\", \"sm_clock_share\": " << c.clock_share()
    << ", \"kernel_slowdown\": " << c.kernel_slowdown() << ", \"kernel_slowdown_extra_s\": "
    << sec(static_cast<uint64_t>(static_cast<double>(kinds_[SIMGPU_KERNEL].device_ns) * (1 - 1 / c.kernel_slowdown())))
    << ", \"other_processes\": [";
  for (size_t i = 0; i < c.other_processes.size(); ++i)
    o << (i ? ", " : "") << "{\"memory_bytes\": "
      << static_cast<unsigned long long>(c.other_processes[i].memory_gib * (1ull << 30))
      << ", \"busy\": " << c.other_processes[i].busy << "}";
  o << "]}";
  o << ", \"streams\": [";
  first = true;
  for (const auto& [id, st] : streams_) {
    o << (first ? "" : ", ") << "{\"stream\": " << id << ", \"ops\": " << st.ops << ", \"busy_s\": " << sec(st.busy_ns)
      << ", \"stream_wait_s\": " << sec(st.stream_wait_ns) << "}";
    first = false;
  }
  o << "]";
  o << ", \"collective_wait_s\": " << sec(wait_ns_) << ", \"ops\": " << ops_
    << ", \"comm_overlap\": {\"nccl_s\": " << sec(comm_ns_) << ", \"overlapped_s\": " << sec(comm_overlapped_ns_)
    << ", \"exposed_s\": " << sec(comm_ns_ - comm_overlapped_ns_) << "}, \"comms\": {";
  first = true;
  for (const auto& [members, c] : comms_) {
    o << (first ? "" : ", ") << "\"" << members << "\": {\"count\": " << c.count << ", \"bytes\": " << c.bytes
      << ", \"device_s\": " << sec(c.device_ns) << ", \"wait_s\": " << sec(c.wait_ns)
      << ", \"overlapped_s\": " << sec(c.overlapped_ns) << ", \"exposed_s\": " << sec(c.device_ns - c.overlapped_ns)
      << "}";
    first = false;
  }
  o << "}"
    << ", \"first_start_ns\": " << (ops_ ? first_start_ : 0) << ", \"last_end_ns\": " << last_end_
    << ", \"clock\": \"CLOCK_MONOTONIC\"}\n";
  return o.str();
}

bool Truth::write(const std::string& dir, int rank) {
  std::string text = json(rank);
  std::string path = dir + "/device-rank-" + std::to_string(rank) + ".json";
  std::string tmp = path + ".tmp";
  // Write then rename, so a reader never sees half a file.
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) return false;
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = (std::fclose(f) == 0) && ok;
  return ok && std::rename(tmp.c_str(), path.c_str()) == 0;
}

}  // namespace simgpu
