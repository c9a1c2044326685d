// The library's mirror of gpuwatch.proto, from the side static_asserts cannot see
// (transport/wire_check.cpp checks the numbers it has): every enum value the proto declares
// has a mirror, and the encoders write every field of the messages the library sends.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <set>
#include <string>

#include "enrich/cupti_reader.h"
#include "enrich/environment_probe.h"
#include "enrich/nvml_sampler.h"
#include "enrich/proc_sampler.h"
#include "frame.h"
#include "gpuwatch.pb.h"
#include "record/record.h"
#include "transport/encode.h"
#include "transport/wire_fields.h"
#include "wire_encode.h"

namespace gi = gpuwatch::inject;
namespace w = gpuwatch::wire;
namespace pb = google::protobuf;

namespace {

std::set<int> ProtoValues(const pb::EnumDescriptor* e) {
  std::set<int> out;
  for (int i = 0; i < e->value_count(); ++i)
    if (e->value(i)->number() != 0) out.insert(e->value(i)->number());
  return out;
}

// Every field of `m` and of the first element of each message field below it is set, but
// those the library does not write (`not_written`, full names).
void CheckEveryFieldSet(const pb::Message& m, const std::set<std::string>& not_written) {
  const pb::Descriptor* d = m.GetDescriptor();
  const pb::Reflection* r = m.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const pb::FieldDescriptor* fd = d->field(i);
    if (not_written.count(fd->full_name())) continue;
    INFO(fd->full_name() << " is declared by gpuwatch.proto but the library's encoder does not write it");
    const bool set = fd->is_repeated() ? r->FieldSize(m, fd) > 0 : r->HasField(m, fd);
    CHECK(set);
    if (!set || fd->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE) continue;
    CheckEveryFieldSet(fd->is_repeated() ? r->GetRepeatedMessage(m, fd, 0) : r->GetMessage(m, fd), not_written);
  }
}

w::Frame Parse(uint32_t frame_field, const std::string& body) {
  std::string bytes;
  gpuwatch::wire::enc::Frame(bytes, frame_field, body);
  w::FrameReader reader;
  reader.Feed(bytes);
  w::Frame f;
  REQUIRE(reader.Next(f) == w::FrameReader::Status::kFrame);
  return f;
}

}  // namespace

TEST_CASE("every value of the proto's enums has a mirror in the library") {
  CHECK(ProtoValues(w::Api_descriptor()) ==
        std::set<int>{gi::kApiMemcpy, gi::kApiMemcpyAsync, gi::kApiStreamSynchronize, gi::kApiDeviceSynchronize,
                      gi::kApiEventSynchronize, gi::kApiLaunchKernel, gi::kApiGraphLaunch,
                      gi::kApiStreamBeginCapture, gi::kApiStreamEndCapture, gi::kApiGraphInstantiate, gi::kApiMemset,
                      gi::kApiMemsetAsync, gi::kApiStreamWaitEvent, gi::kApiLaunchHostFunc, gi::kApiStreamQuery,
                      gi::kApiEventQuery, gi::kApiDriverLaunchKernel, gi::kApiLaunchRun, gi::kApiAllReduce, gi::kApiAllGather,
                      gi::kApiReduceScatter, gi::kApiBroadcast, gi::kApiReduce, gi::kApiSend, gi::kApiRecv,
                      gi::kApiNvtxRange, gi::kApiMalloc, gi::kApiFree, gi::kApiMallocAsync, gi::kApiFreeAsync,
                      gi::kApiMallocManaged, gi::kApiMemGetInfo, gi::kApiEventRecord});
  CHECK(ProtoValues(w::CopyKind_descriptor()) == std::set<int>{gi::kCopyH2D, gi::kCopyD2H, gi::kCopyD2D, gi::kCopyH2H});
  CHECK(ProtoValues(w::EventFlag_descriptor()) ==
        std::set<int>{gi::kFlagPageable, gi::kFlagBlockedHost, gi::kFlagInGroup, gi::kFlagNoGpuTime,
                      gi::kFlagInCapture, gi::kFlagNotReady, gi::kFlagKernelTimed, gi::kFlagFailed});
  CHECK(ProtoValues(w::ActivityKind_descriptor()) ==
        std::set<int>{gi::kActKernel, gi::kActMemcpy, gi::kActMemset, gi::kActSync, gi::kActApi});
  CHECK(ProtoValues(w::CuptiMode_descriptor()) ==
        std::set<int>{static_cast<int>(gi::CuptiBudget::Mode::kBudget) + 1, static_cast<int>(gi::CuptiBudget::Mode::kFull) + 1,
                      static_cast<int>(gi::CuptiBudget::Mode::kOff) + 1});
  CHECK(ProtoValues(w::GpuSource_descriptor()) ==
        std::set<int>{static_cast<int>(gi::CuptiReader::Source::kCupti),
                      static_cast<int>(gi::CuptiReader::Source::kEvents)});
}

TEST_CASE("the encoders write every field of the messages the library sends") {
  // Set by a host collector that forwards a rank, never by the library; the clock probe is
  // collector to collector.
  const std::set<std::string> not_written = {"gpuwatch.wire.PythonStack.native", "gpuwatch.wire.PythonStack.blocked_in",
                                             "gpuwatch.wire.Hello.clock_offset_ns", "gpuwatch.wire.Hello.clock_rtt_ns",
                                             "gpuwatch.wire.Hello.via_collector", "gpuwatch.wire.Frame.clock_probe",
                                             // a host collector's, to the root (issue 21)
                                             "gpuwatch.wire.Hello.upstream_digests", "gpuwatch.wire.Hello.trace_at",
                                             "gpuwatch.wire.Frame.rank_digest"};
  namespace f = gi::field;

  const gi::Identity id{.job_id = "job", .rank = 1, .local_rank = 1, .world_size = 2, .rank_source = "RANK",
                        .host = "h", .pid = 7};
  setenv("GPUWATCH_STEP_RANGE", "step", 1);
  const w::Frame hello = Parse(f::frame::kHello, gi::EncodeHello({&id, 3, "/out", "0.1.0", 9, "token"}));
  unsetenv("GPUWATCH_STEP_RANGE");
  CheckEveryFieldSet(hello.hello(), not_written);

  // Every field non-zero: proto3 leaves zeros out.
  std::string batch;
  gi::AppendBatchSeq(batch, 1);
  gi::AppendBatchSettled(batch, 2);
  gi::AppendEvent(batch, {.api = gi::kApiAllReduce, .copy_kind = gi::kCopyD2D, .flags = gi::kFlagInGroup,
                          .name_id = 1, .site_id = 2, .tid = 3, .t_ns = 4, .dur_ns = 5, .bytes = 6, .stream = 7,
                          .comm_id = 8, .seq = 9, .peer = 10, .gpu_ns = 11, .address = 12, .total_bytes = 13,
                          .calls = 14, .calls_ns = 15});
  gi::AppendLaunchTally(batch, gi::kApiLaunchKernel, 1, 2, 3);
  gi::AppendKernelName(batch, 1, "k");
  gi::AppendCommunicator(batch, gi::CommDefinition{.comm_id = 8, .unique_hash = 0xabc, .parent_hash = 3, .split_index = 4,
                                                   .nranks = 2, .rank = 1, .color = 5, .key = 6, .origin = 2, .ended = 1});
  const gi::DropCounts drops{.ring_full = 1};
  gi::AppendDropCounts(batch, f::batch::kDropped, drops);
  gi::AppendActivity(batch, {.kind = gi::kActApi, .copy_kind = gi::kCopyH2D, .flags = gi::kFlagPageable,
                             .correlation_id = 1, .start_ns = 2, .end_ns = 3, .bytes = 4, .stream = 5, .device = 6,
                             .name_id = 7, .api_id = 8, .api_domain = gi::kApiDomainDriver, .graph_id = 9,
                             .graph_node_id = 10, .comm_kernel = false, .grid = {11, 12, 13}, .block = {14, 15, 16},
                             .registers_per_thread = 17, .static_shared_bytes = 18, .dynamic_shared_bytes = 19});
  gi::AppendGpuSource(batch, 1, "CUPTI");
  gi::AppendEnvironment(batch, {.cuda_runtime = 13000, .cuda_driver = 13010, .nccl = 22800,
                                .device_memory_bytes = 1, .device_sm_count = 2, .device_compute_capability = 90, .device_name = "gpu",
                                .device_pci_bus_id = "00000000:01:00.0",
                                .settings = {{"NCCL_ALGO", "Ring"}},
                                .placement = {.cpu_affinity = "0-3", .device_numa_node = 1, .device_numa_cpus = "4-7",
                                              .cgroup_version = 2, .cpu_quota_us = 5, .cpu_period_us = 6},
                                .network = {.nic_max_mbps = 400000, .nic_total_mbps = 800000, .nic_ports = 2,
                                            .nic_source = "infiniband", .host_gpus = 8}});
  gi::AppendProcSample(batch, {.t_ns = 1, .cpu_ns = 2, .read_chars = 3, .read_bytes = 4, .processes = 5, .run_wait_ns = 6,
                               .cgroup_periods = 7, .cgroup_throttled_periods = 8, .cgroup_throttled_ns = 9});
  gi::DeviceSample dev{.t_ns = 1, .gpu_util_pct = 2, .memory_util_pct = 3, .memory_used_bytes = 4,
                       .memory_total_bytes = 5, .sm_clock_mhz = 6, .sm_clock_max_mhz = 7, .memory_clock_mhz = 8,
                       .memory_clock_max_mhz = 9, .power_mw = 10, .power_limit_mw = 11, .temperature_c = 12,
                       .throttle_reasons = 13, .pcie_gen = 14, .pcie_gen_max = 15, .pcie_width = 16,
                       .pcie_width_max = 17, .pcie_tx_kbps = 18, .pcie_rx_kbps = 19,
                       .processes = {{.pid = 1, .memory_bytes = 2, .sm_util_pct = 3}}, .ecc_uncorrected = 21,
                       .mig_mode = 1, .nvlink_links = 18, .nvlink_links_up = 18, .nvlink_version = 6,
                       .nvlink_tx_bytes_per_s = 26, .nvlink_rx_bytes_per_s = 27, .nvlink_rate_links = 28};
  gi::AppendDeviceSample(batch, dev);
  gi::AppendDeviceSamplerDetail(batch, "libnvidia-ml.so.1 not found");
  gi::AppendCallSite(batch, 2, {"main+0x1 (a.out)"}, "train.py:1 in f");
  gi::AppendPythonStack(batch, 3, {"train.py:1 in f"}, 2);
  gi::AppendHostSample(batch, 5, 6, 3, true);
  gi::AppendHostSampling(batch, {.hz = 100, .samples = 7, .cpu_ns = 8, .dropped = 9, .native_samples = 10,
                                 .timer_captures = 11, .handler_ns = 13, .native_signal = 12, .held_samples = 14});
  gi::AppendCuptiWindows(batch, {{1, 2}}, 3, 4);
  gi::CuptiBudget::Figures o{.mode = gi::CuptiBudget::Mode::kFull, .budget = 0.01, .hook_ns = 40, .hook_samples = 9, .cupti_ns = 3000,
                             .cupti_ns_measured = true, .cupti_graph_ns = 5000, .cupti_graph_ns_measured = true,
                             .hook_calls = 1, .cupti_calls = 2, .cupti_graph_launches = 12, .hooks_added_ns = 3,
                             .cupti_added_ns = 4, .cupti_detaches = 13, .cupti_detach_ns = 14, .cupti_linger_calls = 15,
                             .cupti_linger_ns = 600, .cupti_linger_ns_measured = true, .sampler_ns = 11, .startup_ns = 10,
                             .windows = 5, .window_ns = 6, .elapsed_ns = 7};
  gi::AppendOverhead(batch, o, true, 8);
  CheckEveryFieldSet(Parse(f::frame::kBatch, batch).batch(), not_written);
  // A native stack is the other kind of PythonStack: the fields only it writes.
  std::string native;
  gi::AppendNativeStack(native, (1u << 30) + 1, {"read_input (app)"}, "read");
  const w::Frame parsed = Parse(f::frame::kBatch, native);
  const auto& stack = parsed.batch().python_stacks(0);
  CHECK(stack.native());
  CHECK(stack.blocked_in() == "read");

  std::string hb;
  gi::AppendHeartbeatNow(hb, 1);
  gi::AppendInFlight(hb, gi::kApiAllReduce, 2, 3, 4, 5, 6);
  gi::AppendCommProgress(hb, 4, 7, 8, true);
  CheckEveryFieldSet(Parse(f::frame::kHeartbeat, hb).heartbeat(), not_written);

  std::string goodbye;
  gi::AppendDropCounts(goodbye, f::goodbye::kDropped, drops);
  gi::AppendGoodbyeTail(goodbye, 1, 2);
  CheckEveryFieldSet(Parse(f::frame::kGoodbye, goodbye).goodbye(), not_written);
}
