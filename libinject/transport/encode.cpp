// The encoders, field by field as gpuwatch.proto declares them; strings repaired to UTF-8.
#include "transport/encode.h"

#include <cstdlib>

#include "enrich/cupti_reader.h"
#include "enrich/environment_probe.h"
#include "enrich/nvml_sampler.h"
#include "enrich/proc_sampler.h"
#include "transport/wire_fields.h"
#include "wire_encode.h"

namespace gpuwatch::inject {

using namespace gpuwatch::wire::enc;
namespace f = field;

namespace {

// proto3 `string` fields must be valid UTF-8 or the collector rejects the whole frame; job
// ids, host names and paths come from the environment and may not be. Invalid bytes
// become '?'.
std::string Utf8(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size();) {
    const auto c = static_cast<unsigned char>(in[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = n > 0 && i + n <= in.size();
    for (size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(in[i + k]) & 0xC0) == 0x80;
    if (ok && n > 1) {  // reject overlong forms, surrogates and values past U+10FFFF
      const auto c1 = static_cast<unsigned char>(in[i + 1]);
      ok = !(n == 2 && c < 0xC2) && !(n == 3 && c == 0xE0 && c1 < 0xA0) && !(n == 3 && c == 0xED && c1 >= 0xA0) &&
           !(n == 4 && c == 0xF0 && c1 < 0x90) && !(n == 4 && (c > 0xF4 || (c == 0xF4 && c1 >= 0x90)));
    }
    if (ok) {
      out.append(in.substr(i, n));
      i += n;
    } else {
      out.push_back('?');
      ++i;
    }
  }
  return out;
}

void Text(std::string& o, uint32_t field, std::string_view s) { Bytes(o, field, Utf8(s)); }

}  // namespace

std::string EncodeHello(const HelloInfo& h) {
  namespace m = f::hello;
  std::string o;
  UInt(o, m::kProtocolVersion, f::kProtocolVersion);
  Text(o, m::kJobId, h.id->job_id);
  Int(o, m::kRank, h.id->rank);
  Int(o, m::kLocalRank, h.id->local_rank);
  Int(o, m::kWorldSize, h.id->world_size);
  Text(o, m::kRankSource, h.id->rank_source);
  Text(o, m::kHost, h.id->host);
  Int(o, m::kPid, h.id->pid);
  Int(o, m::kDevice, h.device);
  Text(o, m::kOutDir, h.out_dir);
  Text(o, m::kLibraryVersion, h.library_version);
  UInt(o, m::kStartNs, h.start_ns);
  // Which NVTX range is a training step.
  if (const char* sr = std::getenv("GPUWATCH_STEP_RANGE"); sr && *sr)
    Text(o, m::kStepRange, std::string_view(sr).substr(0, 128));
  // The job token a TCP peer must present.
  Text(o, m::kToken, h.token);
  return o;
}

void AppendBatchSeq(std::string& batch, uint64_t seq) { UInt(batch, f::batch::kSeq, seq); }
void AppendBatchSettled(std::string& batch, uint64_t settled_ns) { UInt(batch, f::batch::kSettledNs, settled_ns); }

void AppendEvent(std::string& batch, const HostEvent& ev) {
  namespace m = f::event;
  // Encoded on the stack first: its length prefixes it in the batch.
  StackOut<18 * kMaxField> e;  // 18 scalar fields below
  UInt(e, m::kApi, ev.api);
  UInt(e, m::kTNs, ev.t_ns);
  UInt(e, m::kDurNs, ev.dur_ns);
  UInt(e, m::kBytes, ev.bytes);
  UInt(e, m::kCopyKind, ev.copy_kind);
  UInt(e, m::kFlags, ev.flags);
  UInt(e, m::kStream, ev.stream);
  UInt(e, m::kTid, ev.tid);
  UInt(e, m::kNameId, ev.name_id);
  UInt(e, m::kSiteId, ev.site_id);  // next to name_id, where the library has always put it
  if (ev.comm_id) {
    UInt(e, m::kCommId, ev.comm_id);
    UInt(e, m::kSeq, ev.seq);
    Int(e, m::kPeer, ev.peer);
  }
  UInt(e, m::kGpuNs, ev.gpu_ns);
  UInt(e, m::kAddress, ev.address);
  UInt(e, m::kTotalBytes, ev.total_bytes);
  UInt(e, m::kCalls, ev.calls);
  UInt(e, m::kCallsNs, ev.calls_ns);
  Message(batch, f::batch::kEvents, e);
}

void AppendLaunchTally(std::string& batch, uint8_t api, uint32_t name_id, uint64_t launches, uint64_t ns) {
  namespace m = f::launch_tally;
  StackOut<4 * kMaxField> t;
  UInt(t, m::kApi, api);
  UInt(t, m::kNameId, name_id);
  UInt(t, m::kLaunches, launches);
  UInt(t, m::kNs, ns);
  Message(batch, f::batch::kLaunchTallies, t);
}

void AppendCallSite(std::string& batch, uint32_t id, const std::vector<std::string>& frames,
                    std::string_view python) {
  namespace m = f::call_site;
  std::string c;
  UInt(c, m::kId, id);
  for (const std::string& fr : frames) Text(c, m::kFrames, fr);
  Text(c, m::kPython, python);
  Message(batch, f::batch::kCallSites, c);
}

namespace {

// A PythonStack message: a Python stack, or (native) a thread's native frames.
void AppendStack(std::string& batch, uint32_t id, const std::vector<std::string>& frames, uint32_t call_site_id,
                 bool native, std::string_view blocked_in) {
  namespace m = f::python_stack;
  std::string p;
  UInt(p, m::kId, id);
  for (const std::string& fr : frames) Text(p, m::kFrames, fr);
  UInt(p, m::kCallSiteId, call_site_id);
  UInt(p, m::kNative, native ? 1 : 0);
  if (!blocked_in.empty()) Text(p, m::kBlockedIn, blocked_in);
  Message(batch, f::batch::kPythonStacks, p);
}

}  // namespace

void AppendPythonStack(std::string& batch, uint32_t id, const std::vector<std::string>& frames,
                       uint32_t call_site_id) {
  AppendStack(batch, id, frames, call_site_id, false, {});
}

void AppendNativeStack(std::string& batch, uint32_t id, const std::vector<std::string>& frames,
                       std::string_view blocked_in) {
  AppendStack(batch, id, frames, 0, true, blocked_in);
}

void AppendHostSample(std::string& batch, uint64_t t_ns, uint32_t tid, uint32_t stack_id, bool in_cuda) {
  namespace m = f::host_sample;
  std::string s;
  UInt(s, m::kTNs, t_ns);
  UInt(s, m::kTid, tid);
  UInt(s, m::kStackId, stack_id);
  UInt(s, m::kInCuda, in_cuda ? 1 : 0);
  Message(batch, f::batch::kHostSamples, s);
}

void AppendHostSampling(std::string& batch, const HostSampler::Totals& t) {
  namespace m = f::host_sampling;
  std::string s;
  Double(s, m::kHz, t.hz);
  UInt(s, m::kSamples, t.samples);
  UInt(s, m::kCpuNs, t.cpu_ns);
  UInt(s, m::kDropped, t.dropped);
  UInt(s, m::kNativeSamples, t.native_samples);
  UInt(s, m::kTimerCaptures, t.timer_captures);
  UInt(s, m::kNativeSignal, static_cast<uint64_t>(t.native_signal));
  UInt(s, m::kHandlerNs, t.handler_ns);
  UInt(s, m::kHeldSamples, t.held_samples);
  Message(batch, f::batch::kHostSampling, s);
}

void AppendKernelName(std::string& batch, uint32_t id, std::string_view name) {
  std::string k;
  UInt(k, f::kernel_name::kId, id);
  Text(k, f::kernel_name::kName, name);
  Message(batch, f::batch::kKernelNames, k);
}

void AppendCommunicator(std::string& batch, uint64_t comm_id, int nranks, int rank, uint64_t unique_hash) {
  AppendCommunicator(batch, CommDefinition{.comm_id = comm_id, .unique_hash = unique_hash, .nranks = nranks, .rank = rank});
}

void AppendCommunicator(std::string& batch, const CommDefinition& d) {
  namespace m = f::communicator;
  std::string c;
  UInt(c, m::kCommId, d.comm_id);
  Int(c, m::kNranks, d.nranks);
  Int(c, m::kRank, d.rank);
  UInt(c, m::kUniqueHash, d.unique_hash);
  UInt(c, m::kOrigin, d.origin);
  UInt(c, m::kParentHash, d.parent_hash);
  Int(c, m::kColor, d.color);
  Int(c, m::kKey, d.key);
  UInt(c, m::kSplitIndex, d.split_index);
  UInt(c, m::kEnded, d.ended);
  Message(batch, f::batch::kCommunicators, c);
}

uint64_t AppendDropCounts(std::string& msg, uint32_t field_number, const DropCounts& d) {
  const std::pair<const char*, uint64_t> counts[] = {
      {"ring_full", d.ring_full},
      {"too_many_threads", d.too_many_threads},
      {"collector_unreachable", d.collector_unreachable},
      {"spool_full", d.spool_full},
      {"gpu_records_unsent", d.gpu_records_unsent},
      {"gpu_records_incomplete", d.gpu_records_incomplete},
  };
  uint64_t sum = 0;
  for (const auto& [reason, n] : counts) {
    sum += n;
    if (n == 0) continue;
    std::string m;
    Text(m, f::drop_count::kReason, reason);
    UInt(m, f::drop_count::kCount, n);
    Message(msg, field_number, m);
  }
  return sum;
}

void AppendActivity(std::string& batch, const ActivityRecord& a) {
  namespace m = f::activity;
  StackOut<23 * kMaxField> o;  // 23 scalar fields below
  UInt(o, m::kKind, a.kind);
  UInt(o, m::kStartNs, a.start_ns);
  UInt(o, m::kEndNs, a.end_ns);
  UInt(o, m::kCorrelationId, a.correlation_id);
  UInt(o, m::kStream, a.stream);
  Int(o, m::kDevice, a.device);
  UInt(o, m::kNameId, a.name_id);
  UInt(o, m::kBytes, a.bytes);
  UInt(o, m::kCopyKind, a.copy_kind);
  UInt(o, m::kFlags, a.flags);
  UInt(o, m::kApiId, a.api_id);
  UInt(o, m::kApiDomain, a.api_domain);
  UInt(o, m::kGraphId, a.graph_id);
  UInt(o, m::kGraphNodeId, a.graph_node_id);
  // Kernels' launch geometry (0 for every other kind: not written).
  UInt(o, m::kGridX, a.grid[0]);
  UInt(o, m::kGridY, a.grid[1]);
  UInt(o, m::kGridZ, a.grid[2]);
  UInt(o, m::kBlockX, a.block[0]);
  UInt(o, m::kBlockY, a.block[1]);
  UInt(o, m::kBlockZ, a.block[2]);
  UInt(o, m::kRegistersPerThread, a.registers_per_thread);
  UInt(o, m::kStaticSharedBytes, a.static_shared_bytes);
  UInt(o, m::kDynamicSharedBytes, a.dynamic_shared_bytes);
  Message(batch, f::batch::kActivities, o);
}

void AppendGpuSource(std::string& batch, int source, std::string_view detail) {
  UInt(batch, f::batch::kGpuSource, static_cast<uint64_t>(source));
  Text(batch, f::batch::kGpuSourceDetail, detail);
}

void AppendHeartbeatNow(std::string& hb, uint64_t now_ns) { UInt(hb, f::heartbeat::kNowNs, now_ns); }

void AppendInFlight(std::string& hb, uint8_t api, uint64_t since_ns, uint32_t tid, uint64_t comm_id, uint64_t seq,
                    uint64_t stream) {
  namespace m = f::in_flight;
  std::string o;
  UInt(o, m::kApi, api);
  UInt(o, m::kSinceNs, since_ns);
  UInt(o, m::kTid, tid);
  UInt(o, m::kCommId, comm_id);
  UInt(o, m::kSeq, seq);
  UInt(o, m::kStream, stream);
  Message(hb, f::heartbeat::kInside, o);
}

void AppendCommProgress(std::string& hb, uint64_t comm_id, uint64_t unique_hash, uint64_t last_seq, bool any) {
  namespace m = f::comm_progress;
  std::string o;
  UInt(o, m::kCommId, comm_id);
  UInt(o, m::kUniqueHash, unique_hash);
  UInt(o, m::kLastSeq, last_seq);
  UInt(o, m::kAnyReturned, any ? 1 : 0);
  Message(hb, f::heartbeat::kComms, o);
}

void AppendGoodbyeTail(std::string& goodbye, uint64_t events_sent, uint64_t end_ns) {
  UInt(goodbye, f::goodbye::kEventsSent, events_sent);
  UInt(goodbye, f::goodbye::kEndNs, end_ns);
}

void AppendEnvironment(std::string& batch, const EnvironmentInfo& e) {
  namespace m = f::environment;
  std::string o;
  Int(o, m::kCudaRuntimeVersion, e.cuda_runtime);
  Int(o, m::kCudaDriverVersion, e.cuda_driver);
  Int(o, m::kNcclVersion, e.nccl);
  UInt(o, m::kDeviceMemoryBytes, e.device_memory_bytes);
  Int(o, m::kDeviceSmCount, e.device_sm_count);
  Int(o, m::kDeviceComputeCapability, e.device_compute_capability);
  Text(o, m::kDeviceName, e.device_name);
  Text(o, m::kDevicePciBusId, e.device_pci_bus_id);
  const HostPlacement& h = e.placement;
  Text(o, m::kCpuAffinity, h.cpu_affinity);
  Int(o, m::kDeviceNumaNodePlus1, h.device_numa_node + 1);
  Text(o, m::kDeviceNumaCpus, h.device_numa_cpus);
  Int(o, m::kCgroupVersion, h.cgroup_version);
  UInt(o, m::kCpuQuotaUs, h.cpu_quota_us);
  UInt(o, m::kCpuPeriodUs, h.cpu_period_us);
  const HostNetwork& n = e.network;
  UInt(o, m::kNicMaxMbps, n.nic_max_mbps);
  UInt(o, m::kNicTotalMbps, n.nic_total_mbps);
  UInt(o, m::kNicPorts, n.nic_ports);
  Text(o, m::kNicSource, n.nic_source);
  UInt(o, m::kHostGpus, n.host_gpus);
  for (const auto& [name, value] : e.settings) {
    std::string v;
    Text(v, f::env_var::kName, name);
    Text(v, f::env_var::kValue, value);
    Message(o, m::kSettings, v);
  }
  Message(batch, f::batch::kEnvironment, o);
}

void AppendProcSample(std::string& batch, const ProcTotals& s) {
  namespace m = f::proc_sample;
  std::string o;
  UInt(o, m::kTNs, s.t_ns);
  UInt(o, m::kCpuNs, s.cpu_ns);
  UInt(o, m::kReadChars, s.read_chars);
  UInt(o, m::kReadBytes, s.read_bytes);
  UInt(o, m::kProcesses, s.processes);
  UInt(o, m::kRunWaitNs, s.run_wait_ns);
  UInt(o, m::kCgroupPeriods, s.cgroup_periods);
  UInt(o, m::kCgroupThrottledPeriods, s.cgroup_throttled_periods);
  UInt(o, m::kCgroupThrottledNs, s.cgroup_throttled_ns);
  Message(batch, f::batch::kProcSamples, o);
}

void AppendDeviceSample(std::string& batch, const DeviceSample& s) {
  namespace m = f::device_sample;
  std::string o;
  UInt(o, m::kTNs, s.t_ns);
  UInt(o, m::kGpuUtilPct, s.gpu_util_pct);
  UInt(o, m::kMemoryUtilPct, s.memory_util_pct);
  UInt(o, m::kMemoryUsedBytes, s.memory_used_bytes);
  UInt(o, m::kMemoryTotalBytes, s.memory_total_bytes);
  UInt(o, m::kSmClockMhz, s.sm_clock_mhz);
  UInt(o, m::kSmClockMaxMhz, s.sm_clock_max_mhz);
  UInt(o, m::kMemoryClockMhz, s.memory_clock_mhz);
  UInt(o, m::kMemoryClockMaxMhz, s.memory_clock_max_mhz);
  UInt(o, m::kPowerMw, s.power_mw);
  UInt(o, m::kPowerLimitMw, s.power_limit_mw);
  UInt(o, m::kTemperatureC, s.temperature_c);
  UInt(o, m::kThrottleReasons, s.throttle_reasons);
  UInt(o, m::kPcieGen, s.pcie_gen);
  UInt(o, m::kPcieGenMax, s.pcie_gen_max);
  UInt(o, m::kPcieWidth, s.pcie_width);
  UInt(o, m::kPcieWidthMax, s.pcie_width_max);
  UInt(o, m::kPcieTxKbps, s.pcie_tx_kbps);
  UInt(o, m::kPcieRxKbps, s.pcie_rx_kbps);
  for (const DeviceProcessSample& p : s.processes) {
    std::string q;
    UInt(q, f::device_process::kPid, p.pid);
    UInt(q, f::device_process::kMemoryBytes, p.memory_bytes);
    UInt(q, f::device_process::kSmUtilPct, p.sm_util_pct);
    Message(o, m::kProcesses, q);
  }
  UInt(o, m::kEccUncorrected, s.ecc_uncorrected);
  UInt(o, m::kMigMode, s.mig_mode);
  UInt(o, m::kNvlinkLinksUp, s.nvlink_links_up);
  UInt(o, m::kNvlinkVersion, s.nvlink_version);
  UInt(o, m::kNvlinkLinks, s.nvlink_links);
  UInt(o, m::kNvlinkTxBytesPerS, s.nvlink_tx_bytes_per_s);
  UInt(o, m::kNvlinkRxBytesPerS, s.nvlink_rx_bytes_per_s);
  UInt(o, m::kNvlinkRateLinks, s.nvlink_rate_links);
  Message(batch, f::batch::kDeviceSamples, o);
}

void AppendDeviceSamplerDetail(std::string& batch, const std::string& detail) {
  Text(batch, f::batch::kDeviceSamplerDetail, detail);
}

void AppendCuptiWindows(std::string& batch, const std::vector<std::pair<uint64_t, uint64_t>>& closed,
                        uint64_t open_since_ns, uint64_t ended_ns) {
  namespace m = f::cupti_window;
  for (const auto& [start, end] : closed) {
    std::string o;
    UInt(o, m::kStartNs, start);
    UInt(o, m::kEndNs, end);
    Message(batch, f::batch::kCuptiWindows, o);
  }
  UInt(batch, f::batch::kCuptiWindowOpenSinceNs, open_since_ns);
  if (ended_ns) UInt(batch, f::batch::kCuptiEndedNs, ended_ns);
}

void AppendOverhead(std::string& batch, const CuptiBudget::Figures& x, bool hw_trace, uint64_t sender_cpu_ns) {
  namespace m = f::overhead;
  std::string o;
  UInt(o, m::kCuptiMode, static_cast<uint64_t>(x.mode) + 1);  // the wire's CuptiMode (wire_check.cpp)
  Double(o, m::kBudget, x.budget);
  Double(o, m::kHookNs, x.hook_ns);
  Double(o, m::kCuptiNs, x.cupti_ns);
  UInt(o, m::kCuptiNsMeasured, x.cupti_ns_measured);
  UInt(o, m::kHookCalls, x.hook_calls);
  UInt(o, m::kCuptiCalls, x.cupti_calls);
  UInt(o, m::kHooksAddedNs, x.hooks_added_ns);
  UInt(o, m::kCuptiAddedNs, x.cupti_added_ns);
  UInt(o, m::kWindows, x.windows);
  UInt(o, m::kWindowNs, x.window_ns);
  UInt(o, m::kElapsedNs, x.elapsed_ns);
  UInt(o, m::kHwTrace, hw_trace);
  UInt(o, m::kSenderCpuNs, sender_cpu_ns);
  UInt(o, m::kHookSamples, x.hook_samples);
  UInt(o, m::kStartupNs, x.startup_ns);
  Double(o, m::kCuptiGraphNs, x.cupti_graph_ns);
  UInt(o, m::kCuptiGraphNsMeasured, x.cupti_graph_ns_measured);
  UInt(o, m::kCuptiGraphLaunches, x.cupti_graph_launches);
  UInt(o, m::kCuptiDetaches, x.cupti_detaches);
  UInt(o, m::kCuptiDetachNs, x.cupti_detach_ns);
  UInt(o, m::kCuptiLingerCalls, x.cupti_linger_calls);
  Double(o, m::kCuptiLingerNs, x.cupti_linger_ns);
  UInt(o, m::kCuptiLingerNsMeasured, x.cupti_linger_ns_measured);
  Message(batch, f::batch::kOverhead, o);
}

}  // namespace gpuwatch::inject
