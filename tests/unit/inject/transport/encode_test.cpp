// The library encodes protobuf by hand (proto/wire_encode.h); these tests parse what it
// writes with the generated classes, so the hand encoder cannot drift from gpuwatch.proto.
#include <catch2/catch.hpp>

#include "enrich/cupti_reader.h"
#include "enrich/environment_probe.h"
#include "enrich/proc_sampler.h"
#include "frame.h"
#include "gpuwatch.pb.h"
#include "record/record.h"
#include "transport/encode.h"
#include "transport/wire_fields.h"
#include "wire_encode.h"

namespace gi = gpuwatch::inject;
namespace w = gpuwatch::wire;

static w::Frame ParseOne(const std::string& bytes) {
  w::FrameReader reader;
  reader.Feed(bytes);
  w::Frame f;
  REQUIRE(reader.Next(f) == w::FrameReader::Status::kFrame);
  w::Frame extra;
  CHECK(reader.Next(extra) == w::FrameReader::Status::kNeedMore);
  return f;
}

TEST_CASE("hello encodes every field as the proto declares") {
  gi::Identity id;
  id.job_id = "job-7";
  id.rank = 3;
  id.local_rank = 1;
  id.world_size = 8;
  id.rank_source = "RANK";
  id.host = "node-a";
  id.pid = 4242;
  std::string out;
  gpuwatch::wire::enc::Frame(out, gi::field::frame::kHello,
                             gi::EncodeHello({&id, 2, "/tmp/out", "0.1.0", 123456789012345ull, "tok-14"}));
  const w::Frame f = ParseOne(out);
  REQUIRE(f.has_hello());
  const auto& h = f.hello();
  CHECK(h.protocol_version() == w::PROTOCOL_VERSION);
  CHECK(h.job_id() == "job-7");
  CHECK(h.rank() == 3);
  CHECK(h.local_rank() == 1);
  CHECK(h.world_size() == 8);
  CHECK(h.rank_source() == "RANK");
  CHECK(h.host() == "node-a");
  CHECK(h.pid() == 4242);
  CHECK(h.device() == 2);
  CHECK(h.out_dir() == "/tmp/out");
  CHECK(h.library_version() == "0.1.0");
  CHECK(h.start_ns() == 123456789012345ull);
  CHECK(h.token() == "tok-14");
}

TEST_CASE("unknown identity (-1) survives the round trip") {
  gi::Identity id;  // rank, local_rank, world_size = -1
  std::string out;
  gpuwatch::wire::enc::Frame(out, gi::field::frame::kHello, gi::EncodeHello({&id, -1, "", "", 0}));
  const w::Frame f = ParseOne(out);
  CHECK(f.hello().rank() == -1);
  CHECK(f.hello().world_size() == -1);
  CHECK(f.hello().device() == -1);
  CHECK(f.hello().token().empty());  // no token given (Unix socket, spool): none on the wire
}

TEST_CASE("batch encodes events, names, communicators and drops") {
  std::string batch;
  gi::AppendEvent(batch, {.api = gi::kApiMemcpyAsync, .copy_kind = gi::kCopyH2D,
                          .flags = gi::kFlagPageable | gi::kFlagBlockedHost, .tid = 99, .t_ns = 1'000'000'123,
                          .dur_ns = 456, .bytes = 8u << 20, .stream = 0x7f00deadbeef});
  // The first collective: seq zero must still read back as zero.
  gi::AppendEvent(batch, {.api = gi::kApiAllReduce, .tid = 7, .bytes = 4096, .comm_id = 2, .seq = 0, .peer = -1,
                          .gpu_ns = 1234567});
  gi::AppendEvent(batch, {.api = gi::kApiLaunchKernel, .name_id = 5, .tid = 7});
  gi::AppendKernelName(batch, 5, "_Z4spiny");
  gi::AppendCommunicator(batch, 2, 4, 1, 0xfeedfacecafebeefull);
  CHECK(gi::AppendDropCounts(batch, gi::field::batch::kDropped, {.ring_full = 17}) == 17);
  std::string out;
  gpuwatch::wire::enc::Frame(out, gi::field::frame::kBatch, batch);
  const w::Frame f = ParseOne(out);
  REQUIRE(f.has_batch());
  const auto& b = f.batch();
  REQUIRE(b.events_size() == 3);
  const auto& e0 = b.events(0);
  CHECK(e0.api() == w::CUDA_MEMCPY_ASYNC);
  CHECK(e0.copy_kind() == w::COPY_H2D);
  CHECK(e0.flags() == (w::FLAG_PAGEABLE | w::FLAG_BLOCKED_HOST));
  CHECK(e0.t_ns() == 1'000'000'123);
  CHECK(e0.dur_ns() == 456);
  CHECK(e0.bytes() == (8u << 20));
  CHECK(e0.stream() == 0x7f00deadbeef);
  CHECK(e0.tid() == 99);
  const auto& e1 = b.events(1);
  CHECK(e1.api() == w::NCCL_ALL_REDUCE);
  CHECK(e1.comm_id() == 2);
  CHECK(e1.seq() == 0);
  CHECK(e1.peer() == -1);
  CHECK(e1.gpu_ns() == 1234567);
  CHECK(b.events(2).name_id() == 5);
  REQUIRE(b.kernel_names_size() == 1);
  CHECK(b.kernel_names(0).name() == "_Z4spiny");
  REQUIRE(b.communicators_size() == 1);
  CHECK(b.communicators(0).nranks() == 4);
  CHECK(b.communicators(0).rank() == 1);
  CHECK(b.communicators(0).unique_hash() == 0xfeedfacecafebeefull);
  REQUIRE(b.dropped_size() == 1);
  CHECK(b.dropped(0).reason() == "ring_full");
  CHECK(b.dropped(0).count() == 17);
}

TEST_CASE("goodbye and an empty batch are present frames") {
  std::string g;
  gi::AppendDropCounts(g, gi::field::goodbye::kDropped, {.too_many_threads = 2});
  gi::AppendGoodbyeTail(g, 1000, 55);
  std::string out;
  gpuwatch::wire::enc::Frame(out, gi::field::frame::kGoodbye, g);
  gpuwatch::wire::enc::Frame(out, gi::field::frame::kBatch, "");
  w::FrameReader reader;
  reader.Feed(out);
  w::Frame f;
  REQUIRE(reader.Next(f) == w::FrameReader::Status::kFrame);
  REQUIRE(f.has_goodbye());
  CHECK(f.goodbye().events_sent() == 1000);
  CHECK(f.goodbye().dropped(0).count() == 2);
  REQUIRE(reader.Next(f) == w::FrameReader::Status::kFrame);
  CHECK(f.has_batch());
}

TEST_CASE("activities and the GPU source encode as the proto declares") {
  std::string batch;
  gi::ActivityRecord k{};
  k.kind = gi::kActKernel;
  k.start_ns = 5'000'000'000ull;
  k.end_ns = 5'000'150'000ull;
  k.correlation_id = 77;
  k.stream = 13;
  k.device = 0;
  k.name_id = 4;
  k.graph_id = 9;
  k.graph_node_id = 1ull << 40;
  gi::AppendActivity(batch, k);
  gi::ActivityRecord m{};
  m.kind = gi::kActMemcpy;
  m.bytes = 1 << 20;
  m.copy_kind = gi::kCopyD2H;
  m.flags = gi::kFlagPageable;
  m.device = 3;
  gi::AppendActivity(batch, m);
  gi::ActivityRecord api{};
  api.kind = gi::kActApi;
  api.api_id = 211;
  api.api_domain = 1;
  api.correlation_id = 77;
  gi::AppendActivity(batch, api);
  gi::AppendGpuSource(batch, 1, "CUPTI activity records");
  std::string out;
  gpuwatch::wire::enc::Frame(out, gi::field::frame::kBatch, batch);
  const w::Frame f = ParseOne(out);
  const auto& b = f.batch();
  REQUIRE(b.activities_size() == 3);
  CHECK(b.activities(0).kind() == w::ACTIVITY_KERNEL);
  CHECK(b.activities(0).start_ns() == 5'000'000'000ull);
  CHECK(b.activities(0).end_ns() == 5'000'150'000ull);
  CHECK(b.activities(0).correlation_id() == 77);
  CHECK(b.activities(0).stream() == 13);
  CHECK(b.activities(0).name_id() == 4);
  CHECK(b.activities(0).graph_id() == 9);
  CHECK(b.activities(0).graph_node_id() == (1ull << 40));
  CHECK(b.activities(1).graph_id() == 0);
  CHECK(b.activities(1).kind() == w::ACTIVITY_MEMCPY);
  CHECK(b.activities(1).bytes() == (1u << 20));
  CHECK(b.activities(1).copy_kind() == w::COPY_D2H);
  CHECK(b.activities(1).flags() == w::FLAG_PAGEABLE);
  CHECK(b.activities(1).device() == 3);
  CHECK(b.activities(2).kind() == w::ACTIVITY_API);
  CHECK(b.activities(2).api_id() == 211);
  CHECK(b.activities(2).api_domain() == 1);
  CHECK(b.gpu_source() == w::GPU_SOURCE_CUPTI);
  CHECK(b.gpu_source_detail() == "CUPTI activity records");
}

TEST_CASE("strings that are not UTF-8 are repaired so the frame still decodes") {
  gi::Identity id;
  id.job_id = std::string("job-\xff\xfe-") + "\xc3\xa9t\xc3\xa9";  // two bad bytes, then valid é
  id.host = "host\xc0\xaf";                                           // overlong '/'
  std::string out;
  gpuwatch::wire::enc::Frame(out, gi::field::frame::kHello, gi::EncodeHello({&id, 0, "/tmp/\xed\xa0\x80", "", 0}));
  const w::Frame f = ParseOne(out);
  CHECK(f.hello().job_id() == "job-?" "?-\xc3\xa9t\xc3\xa9");
  CHECK(f.hello().host() == "host??");
  CHECK(f.hello().out_dir() == "/tmp/???");
}

TEST_CASE("a heartbeat encodes the calls in flight and the communicators' progress") {
  std::string hb;
  gi::AppendHeartbeatNow(hb, 99'000'000'000ull);
  gi::AppendInFlight(hb, gi::kApiAllReduce, 98'000'000'000ull, 4242, 3, 17, 0x7f00);
  gi::AppendCommProgress(hb, 3, 0xabcdefull, 16, true);
  gi::AppendCommProgress(hb, 4, 0x1234ull, 0, false);
  std::string out;
  gpuwatch::wire::enc::Frame(out, gi::field::frame::kHeartbeat, hb);
  const w::Frame f = ParseOne(out);
  REQUIRE(f.has_heartbeat());
  const auto& h = f.heartbeat();
  CHECK(h.now_ns() == 99'000'000'000ull);
  REQUIRE(h.inside_size() == 1);
  CHECK(h.inside(0).api() == w::NCCL_ALL_REDUCE);
  CHECK(h.inside(0).since_ns() == 98'000'000'000ull);
  CHECK(h.inside(0).tid() == 4242);
  CHECK(h.inside(0).comm_id() == 3);
  CHECK(h.inside(0).seq() == 17);
  CHECK(h.inside(0).stream() == 0x7f00);
  REQUIRE(h.comms_size() == 2);
  CHECK(h.comms(0).unique_hash() == 0xabcdefull);
  CHECK(h.comms(0).last_seq() == 16);
  CHECK(h.comms(0).any_returned());
  CHECK_FALSE(h.comms(1).any_returned());
}

TEST_CASE("environment, process samples and the settled time encode as Batch fields 9, 10 and 12") {
  gi::EnvironmentInfo env;
  env.cuda_runtime = 13000;
  env.cuda_driver = 13010;
  env.nccl = 22800;
  env.settings = {{"NCCL_P2P_DISABLE", "1"}, {"NCCL_NET", "Socket"}};
  gi::ProcTotals s;
  s.t_ns = 7'000'000'000ull;
  s.cpu_ns = 1'500'000'000ull;
  s.read_chars = 1ull << 33;
  s.read_bytes = 4096;
  s.processes = 5;
  s.run_wait_ns = 12345;
  std::string batch;
  gi::AppendBatchSeq(batch, 3);
  gi::AppendBatchSettled(batch, 6'900'000'000ull);
  gi::AppendEnvironment(batch, env);
  gi::AppendProcSample(batch, s);
  s.t_ns += 100'000'000;
  gi::AppendProcSample(batch, s);
  std::string out;
  gpuwatch::wire::enc::Frame(out, gi::field::frame::kBatch, batch);
  const w::Frame f = ParseOne(out);
  const auto& b = f.batch();
  REQUIRE(b.has_environment());
  CHECK(b.environment().cuda_runtime_version() == 13000);
  CHECK(b.environment().cuda_driver_version() == 13010);
  CHECK(b.environment().nccl_version() == 22800);
  REQUIRE(b.environment().settings_size() == 2);
  CHECK(b.environment().settings(1).name() == "NCCL_NET");
  CHECK(b.environment().settings(1).value() == "Socket");
  REQUIRE(b.proc_samples_size() == 2);
  CHECK(b.proc_samples(0).t_ns() == 7'000'000'000ull);
  CHECK(b.proc_samples(0).cpu_ns() == 1'500'000'000ull);
  CHECK(b.proc_samples(0).read_chars() == (1ull << 33));
  CHECK(b.proc_samples(0).read_bytes() == 4096);
  CHECK(b.proc_samples(0).processes() == 5);
  CHECK(b.proc_samples(0).run_wait_ns() == 12345);
  CHECK(b.proc_samples(1).t_ns() == 7'100'000'000ull);
  CHECK(b.seq() == 3);
  CHECK(b.settled_ns() == 6'900'000'000ull);
}

TEST_CASE("a sync's call site is Event.site_id and a CallSite in Batch field 11") {
  std::string batch;
  gi::AppendEvent(batch, {.api = gi::kApiStreamSynchronize, .site_id = 3, .tid = 1});
  // The same number on a launch: another id space, a kernel name.
  gi::AppendEvent(batch, {.api = gi::kApiLaunchKernel, .name_id = 3, .tid = 1});
  gi::AppendCallSite(batch, 3, {"step()+0x1c (train)", "main+0x9 (train)"}, "train.py:42 in step");
  std::string out;
  gpuwatch::wire::enc::Frame(out, gi::field::frame::kBatch, batch);
  const w::Frame f = ParseOne(out);
  REQUIRE(f.batch().events_size() == 2);
  CHECK(f.batch().events(0).site_id() == 3);
  CHECK(f.batch().events(0).name_id() == 0);
  CHECK(f.batch().events(1).name_id() == 3);
  CHECK(f.batch().events(1).site_id() == 0);
  REQUIRE(f.batch().call_sites_size() == 1);
  const auto& c = f.batch().call_sites(0);
  CHECK(c.id() == 3);
  REQUIRE(c.frames_size() == 2);
  CHECK(c.frames(0) == "step()+0x1c (train)");
  CHECK(c.python() == "train.py:42 in step");
}

TEST_CASE("a split communicator's definition carries its parent, split index, color, key and end") {
  std::string batch;
  gi::AppendCommunicator(batch, gi::CommDefinition{.comm_id = 4, .unique_hash = 0xabc, .parent_hash = 0x123,
                                                   .split_index = 2, .nranks = 2, .rank = 1, .color = 5, .key = 1,
                                                   .origin = 2, .ended = 1});
  std::string out;
  gpuwatch::wire::enc::Frame(out, gi::field::frame::kBatch, batch);
  const w::Frame f = ParseOne(out);
  REQUIRE(f.batch().communicators_size() == 1);
  const auto& c = f.batch().communicators(0);
  CHECK(c.comm_id() == 4);
  CHECK(c.unique_hash() == 0xabc);
  CHECK(c.origin() == w::Communicator::ORIGIN_SPLIT);
  CHECK(c.parent_hash() == 0x123);
  CHECK(c.split_index() == 2);
  CHECK(c.color() == 5);
  CHECK(c.key() == 1);
  CHECK(c.nranks() == 2);
  CHECK(c.rank() == 1);
  CHECK(c.ended() == 1);
}

// The per-record encoders build their body in a fixed stack buffer sized by their field count
// (wire_encode.h, StackOut): every field at its widest must still fit and read back.
TEST_CASE("an event and an activity with every field at its widest encode whole") {
  constexpr uint64_t kMax = ~uint64_t{0};
  std::string batch;
  gi::AppendEvent(batch, {.api = 255, .copy_kind = 255, .flags = 0xffff, .name_id = ~0u, .site_id = ~0u,
                          .tid = ~0u, .t_ns = kMax, .dur_ns = kMax, .bytes = kMax, .stream = kMax,
                          .comm_id = kMax, .seq = kMax, .peer = -1, .gpu_ns = kMax, .address = kMax,
                          .total_bytes = kMax});
  gi::ActivityRecord a{};
  a.kind = 255;
  a.copy_kind = 255;
  a.flags = 0xffff;
  a.correlation_id = ~0u;
  a.start_ns = a.end_ns = a.bytes = a.graph_node_id = kMax;
  a.stream = a.name_id = a.api_id = a.api_domain = a.graph_id = ~0u;
  a.device = -1;
  for (int i = 0; i < 3; ++i) a.grid[i] = a.block[i] = ~0u;
  a.registers_per_thread = a.static_shared_bytes = a.dynamic_shared_bytes = ~0u;
  gi::AppendActivity(batch, a);
  std::string out;
  gpuwatch::wire::enc::Frame(out, gi::field::frame::kBatch, batch);
  const w::Frame f = ParseOne(out);
  REQUIRE(f.batch().events_size() == 1);
  const auto& e = f.batch().events(0);
  CHECK(e.t_ns() == kMax);
  CHECK(e.seq() == kMax);
  CHECK(e.peer() == -1);
  CHECK(e.total_bytes() == kMax);
  CHECK(e.site_id() == ~0u);
  REQUIRE(f.batch().activities_size() == 1);
  const auto& r = f.batch().activities(0);
  CHECK(r.start_ns() == kMax);
  CHECK(r.device() == -1);
  CHECK(r.graph_node_id() == kMax);
  CHECK(r.dynamic_shared_bytes() == ~0u);
}
