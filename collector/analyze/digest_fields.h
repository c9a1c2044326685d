// The field lists of the figures' structs (RankResult and everything inside it), as
// nlohmann-json to_json/from_json pairs: one list per struct, used both ways. The rank
// digest (rank_digest.cpp) and the rank checkpoint (rank_checkpoint.cpp) encode with them.
#pragma once
#include <nlohmann/json.hpp>

#include "analyze/rank_result.h"

namespace gpuwatch::collector {

using nlohmann::json;

// One list of fields, both ways: GW_DIGEST(Type, a, b, c) defines to_json/from_json of
// Type as the array [a, b, c].
#define GW_DIGEST_TO(f) j.push_back(v.f);
#define GW_DIGEST_FROM(f) j.at(i++).get_to(v.f);
#define GW_DIGEST(Type, ...)                                                  \
  inline void to_json(json& j, const Type& v) {                               \
    j = json::array();                                                        \
    NLOHMANN_JSON_EXPAND(NLOHMANN_JSON_PASTE(GW_DIGEST_TO, __VA_ARGS__))      \
  }                                                                           \
  inline void from_json(const json& j, Type& v) {                             \
    size_t i = 0;                                                             \
    NLOHMANN_JSON_EXPAND(NLOHMANN_JSON_PASTE(GW_DIGEST_FROM, __VA_ARGS__))    \
    (void)i;                                                                  \
  }

// The classes whose state is private (friends of this struct).
struct DigestAccess {
  static json Histogram(const LogHistogram& h) {
    json buckets = json::array();  // sparse: [index, count] of the non-empty buckets
    for (size_t b = 0; b < LogHistogram::kBuckets; ++b)
      if (h.buckets_[b]) buckets.push_back(json::array({b, h.buckets_[b]}));
    return json::array({buckets, h.count_, h.min_, h.max_});
  }
  static void Histogram(const json& j, LogHistogram& h) {
    h = LogHistogram();
    for (const json& b : j.at(0)) {
      const size_t at = b.at(0).get<size_t>();
      if (at >= LogHistogram::kBuckets) throw std::out_of_range("histogram bucket out of range");
      h.buckets_[at] = b.at(1).get<uint64_t>();
    }
    j.at(1).get_to(h.count_);
    j.at(2).get_to(h.min_);
    j.at(3).get_to(h.max_);
  }
  static json Busy(const BusySeries& s) {
    return json::array({s.busy_, s.compute_, s.origin_, s.end_, s.width_, s.started_});
  }
  static void Busy(const json& j, BusySeries& s) {
    j.at(0).get_to(s.busy_);
    j.at(1).get_to(s.compute_);
    j.at(2).get_to(s.origin_);
    j.at(3).get_to(s.end_);
    j.at(4).get_to(s.width_);
    j.at(5).get_to(s.started_);
  }
  static json Peaks(const PeakSeries& s) {
    return json::array({s.peak_, s.origin_, s.last_, s.width_, s.level_, s.started_});
  }
  static void Peaks(const json& j, PeakSeries& s) {
    j.at(0).get_to(s.peak_);
    j.at(1).get_to(s.origin_);
    j.at(2).get_to(s.last_);
    j.at(3).get_to(s.width_);
    j.at(4).get_to(s.level_);
    j.at(5).get_to(s.started_);
  }
  static json Stats(const StepStats& s) { return json::array({s.counts_, s.n_, s.sum_, s.max_}); }
  static void Stats(const json& j, StepStats& s) {
    j.at(0).get_to(s.counts_);
    j.at(1).get_to(s.n_);
    j.at(2).get_to(s.sum_);
    j.at(3).get_to(s.max_);
  }
  static void Shift(BusySeries& s, int64_t d, uint64_t (*shift)(uint64_t, int64_t)) {
    if (!s.started_) return;
    s.origin_ = shift(s.origin_, d);
    s.end_ = shift(s.end_, d);
  }
  static void Shift(PeakSeries& s, int64_t d, uint64_t (*shift)(uint64_t, int64_t)) {
    if (!s.started_) return;
    s.origin_ = shift(s.origin_, d);
    s.last_ = shift(s.last_, d);
  }
};

inline void to_json(json& j, const LogHistogram& h) { j = DigestAccess::Histogram(h); }
inline void from_json(const json& j, LogHistogram& h) { DigestAccess::Histogram(j, h); }
inline void to_json(json& j, const BusySeries& s) { j = DigestAccess::Busy(s); }
inline void from_json(const json& j, BusySeries& s) { DigestAccess::Busy(j, s); }
inline void to_json(json& j, const PeakSeries& s) { j = DigestAccess::Peaks(s); }
inline void from_json(const json& j, PeakSeries& s) { DigestAccess::Peaks(j, s); }
inline void to_json(json& j, const StepStats& s) { j = DigestAccess::Stats(s); }
inline void from_json(const json& j, StepStats& s) { DigestAccess::Stats(j, s); }

GW_DIGEST(Tally, count, bytes, ns)
GW_DIGEST(DeviceSlice, busy, noncomm_busy, compute, comm, copy, idle, graph_kernels)
GW_DIGEST(SyncFigures, count, ns, kind_count, kind_ns)
GW_DIGEST(CopyFigures::Direction, calls, pageable, blocking_count)
GW_DIGEST(CopyFigures, dir, pageable, blocking, d2d, memset)
GW_DIGEST(CollCall, hash, seq, t_ns, gpu_ns, pointer_keyed, kernel_timed, op)
GW_DIGEST(CollectiveFigures::Op, count, bytes, timed, bus_bytes, local)
GW_DIGEST(CollectiveFigures, ops, sample, stride)
GW_DIGEST(CollectiveSizeFigures, threshold_bytes, small_calls, small_bytes, small_timed, small_timed_bytes, small_ns,
          large_calls, large_timed, large_ns, large_bus_bytes, min_call_ns)
GW_DIGEST(P2pLink, comm_hash, comm_id, comm_rank, comm_size, peer, send, count, bytes, gpu_ns, timed, call_gpu_ns)
GW_DIGEST(PipelineFigures, links, links_dropped, recv_kernels, recv_kernel_ns, bubble_ns, grouped_calls)
GW_DIGEST(CommFacts, nranks, rank, unique_hash, origin, parent_hash, split_index, color, key, ended)
GW_DIGEST(CommFigures, hash, identified, nranks, rank, ops, kernels, kernel_ns, overlapped_ns, facts)
GW_DIGEST(CommTable, comms, calls_not_kept)
GW_DIGEST(OverlapTally, kernels, nccl_ns, overlapped_ns)
GW_DIGEST(OverlapFigures, total, by_comm, per_step)
GW_DIGEST(LaunchGeometry, blocks, block_threads, registers, shared_bytes)
GW_DIGEST(SmFillFigures::Shape, name, geometry, count, ns, sm_share, occupancy)
GW_DIGEST(SmFillFigures, sm_count, kernels, kernel_ns, small_grid_kernels, idle_sm_ns, top)
GW_DIGEST(LaunchFigures, launches, launch_ns, driver_launches, by_name)
GW_DIGEST(GraphFigures::Graph, launches, kernels, ops, device_ns)
GW_DIGEST(GraphFigures, launches, launch_ns, captured_calls, captures, instantiations, device, by_graph)
GW_DIGEST(ApiCallFigures::Api, count, ns, captured, not_ready, failed)
GW_DIGEST(ApiCallFigures, by_api)
GW_DIGEST(StreamFigures::Stream, work, busy_ns, idle_ns, waits)
GW_DIGEST(StreamFigures, by_stream, waits, waits_unresolved)
GW_DIGEST(GpuFigures::KernelStat, count, ns, in_graphs)
GW_DIGEST(GpuFigures::CopyStat, device, pageable)
GW_DIGEST(GpuFigures::Coverage, sampled, windows, covered_ns, enqueues, enqueues_in_windows, ended_ns)
GW_DIGEST(GpuFigures, cupti_ranks, events_ranks, source_detail, work, first_ns, last_ns, active_ns, run,
          gap_count, gaps, launch_delay, kernel_count, kernel_with_api, kernel_short, graph_kernels,
          kernel_dur, by_name, other_kernels, comm_kernels, comm_graph_ns, coll_events, copies, late, overflow, unmatched,
          coverage, series)
GW_DIGEST(StepMark, start_ns, end_ns, device_covered)
GW_DIGEST(StepsFound, source, total, stats, nvtx, inferred)
GW_DIGEST(CallsTime, calls, timed, ns)
GW_DIGEST(StepRec, start, end, done, sync_mid, sync_mid_count, graph_launches, covered, dev, colls, coll_known)
GW_DIGEST(PaceStats, step, host_period, device_period)
GW_DIGEST(StepFigures, steps, charged_until, sync_mid_ns, sync_mid_count, pace)
GW_DIGEST(InputIoFigures, intervals, max_processes, host_wait_s, gap_s, cpu_s, run_wait_s, read_chars,
          read_bytes, periods, throttled_periods, throttled_s, throttled_gap_s, all_s, all_cpu_s, all_read_chars,
          all_run_wait_s, all_contended_s, all_periods, all_throttled_periods, all_throttled_s, cgroup)
GW_DIGEST(MemoryFigures, allocations, frees, allocated_bytes, reserved_bytes, peak_bytes, peak_t_ns,
          untracked, total_bytes, min_free_bytes, mem_get_info_calls, series)
GW_DIGEST(DeviceStateFigures::Other, memory_bytes_max, busy_s, samples, sm_util_max_pct)
GW_DIGEST(DeviceStateFigures, samples, first_ns, last_ns, sampled_s, gpu_util_mean, memory_util_mean,
          memory_used_max, memory_total, sm_clock_max_mhz, memory_clock_max_mhz, sm_clock_busy_mean_mhz,
          busy_samples, power_mean_w, power_limit_w, temperature_max_c, throttled_power,
          throttled_thermal, throttled_hw, throttled_busy_s, throttle_lost_s, throttled_clock_share,
          pcie_gen, pcie_width, pcie_gen_max, pcie_width_max, pcie_gen_min, pcie_width_min,
          pcie_tx_mbps, pcie_rx_mbps, last_util, last_power_w, last_sm_clock_mhz, last_temperature_c,
          last_memory_used, ecc_uncorrected, mig, nvlink_links, nvlink_links_up, nvlink_version,
          nvlink_rate_samples, nvlink_rate_s, nvlink_tx_bytes, nvlink_rx_bytes, nvlink_tx_peak_gbps,
          nvlink_rx_peak_gbps, others, others_busy_s, util_series, clock_series)
GW_DIGEST(UtilizationShape, kind, windows, mean, high, idle_share, idle_runs, drops, first_third,
          last_third)
GW_DIGEST(SiteStat, python, python_stack, frames, ns, count)
GW_DIGEST(HostFrame, where, blocked_in, samples, share)
GW_DIGEST(HostFramesFigures, samples, tid, data_loading_share, unnamed_share, frames)
GW_DIGEST(SamplingFacts, known, hz, samples, cpu_ns, dropped, native_samples, timer_captures, native_signal,
          handler_ns, held_samples)
GW_DIGEST(EnvFacts, known, cuda_runtime, cuda_driver, nccl, settings, device_memory_bytes, device_sm_count,
          device_compute_capability,
          device_name, cpu_affinity, device_numa_cpus, device_numa_node, cgroup_version, cpu_quota_us, cpu_period_us,
          nic_max_mbps, nic_total_mbps, nic_ports, nic_source, host_gpus)
GW_DIGEST(OverheadFacts, known, cupti_mode, budget, hook_ns, cupti_ns, cupti_ns_measured, hw_trace,
          hook_calls, cupti_calls, hooks_added_ns, cupti_added_ns, windows, window_ns, elapsed_ns,
          sender_cpu_ns, hook_samples, startup_ns, cupti_graph_ns, cupti_graph_ns_measured, cupti_graph_launches,
          cupti_detaches, cupti_detach_ns, cupti_linger_calls, cupti_linger_ns, cupti_linger_ns_measured, sampler_ns,
          sampler_signals_ns, collector_cpu_ns)
GW_DIGEST(WhatIf, step_ms, speedup, assumes, then_paced_by)
GW_DIGEST(PathStreamTime, stream, ms)
GW_DIGEST(CriticalPathFigures, steps, step_ms, path_ms, alone_ms, part_ms, gpu_streams)
GW_DIGEST(Finding, id, title, severity, ranks, time_lost_s, share, evidence, summary, fix, what_if)
GW_DIGEST(PerStepMean, known, per_step, steps, compute_ms, comm_not_overlapped_ms, idle_ms,
          host_blocked_in_syncs_ms, copies_ms, graph_launches, graph_kernels, step_ms)
GW_DIGEST(RankResult, rank, host, host_calls, host_first_ns, host_last_ns, sync, copies, collectives,
          coll_sizes, pipeline, comms, overlap, sm_fill, launches, graphs, api_calls, gpu, streams, found, steps, per_step_device, io, memory, device,
          device_sampler_detail, gpu_shape, sites, host_frames, sampling, env, dropped, dropped_total,
          overhead, findings, per_step, critical_path, all_fixed)

}  // namespace gpuwatch::collector
