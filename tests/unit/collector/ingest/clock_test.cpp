// Multi-host clocks (--upstream): the offset estimate from probes, the one function that
// moves a rank's times onto another clock, and the root's side of it in a Connection
// (probes answered, forwarded ranks shifted at ingest).
#include <catch2/catch.hpp>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <cstdlib>
#include <set>

#include "ingest/clock_estimate.h"
#include "ingest/clock_shift.h"
#include "fixtures.h"

using namespace gwtest;
namespace pb = google::protobuf;

namespace {

// Fields named *_ns that are not times on the rank's clock, so must not move.
const std::set<std::string> kNotTimes = {
    "gpuwatch.wire.Event.dur_ns",           "gpuwatch.wire.Event.gpu_ns",
    "gpuwatch.wire.Event.calls_ns",
    "gpuwatch.wire.ProcSample.cpu_ns",      "gpuwatch.wire.ProcSample.run_wait_ns",
    "gpuwatch.wire.Hello.clock_offset_ns",  "gpuwatch.wire.Hello.clock_rtt_ns",
    "gpuwatch.wire.ClockProbe.sent_ns",     "gpuwatch.wire.ClockProbe.root_ns",
    "gpuwatch.wire.Overhead.hooks_added_ns", "gpuwatch.wire.Overhead.cupti_added_ns",
    "gpuwatch.wire.Overhead.window_ns",     "gpuwatch.wire.Overhead.elapsed_ns",
    "gpuwatch.wire.Overhead.sender_cpu_ns", "gpuwatch.wire.Overhead.startup_ns",
    "gpuwatch.wire.HostSampling.cpu_ns",    "gpuwatch.wire.HostSampling.handler_ns",
    "gpuwatch.wire.ProcSample.cgroup_throttled_ns", "gpuwatch.wire.Overhead.cupti_detach_ns"};

constexpr uint64_t kT = 5'000'000'000;

// An integer field named *_ns. Doubles named so (Overhead.hook_ns) are per-call costs: a
// time on a clock is always an integer.
bool IsNsField(const pb::FieldDescriptor* f) {
  const std::string& n = f->name();
  if (n.size() < 3 || n.compare(n.size() - 3, 3, "_ns") != 0) return false;
  return f->cpp_type() == pb::FieldDescriptor::CPPTYPE_UINT64 ||
         f->cpp_type() == pb::FieldDescriptor::CPPTYPE_INT64;
}

// Sets every *_ns field reachable from `m` to kT (one element of each repeated message).
void FillNs(pb::Message* m, std::vector<const pb::FieldDescriptor*>* seen) {
  const pb::Descriptor* d = m->GetDescriptor();
  const pb::Reflection* r = m->GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const pb::FieldDescriptor* f = d->field(i);
    if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
      FillNs(f->is_repeated() ? r->AddMessage(m, f) : r->MutableMessage(m, f), seen);
      continue;
    }
    if (!IsNsField(f)) continue;
    REQUIRE_FALSE(f->is_repeated());
    if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_UINT64) r->SetUInt64(m, f, kT);
    else r->SetInt64(m, f, kT);
    seen->push_back(f);
  }
}

uint64_t NsOf(const pb::Message& m, const pb::FieldDescriptor* f) {
  const pb::Reflection* r = m.GetReflection();
  return f->cpp_type() == pb::FieldDescriptor::CPPTYPE_UINT64 ? r->GetUInt64(m, f)
                                                             : static_cast<uint64_t>(r->GetInt64(m, f));
}

// Every *_ns field of `m` checked against kT + delta (times) or kT (the rest).
void CheckNs(const pb::Message& m, int64_t delta, int* times) {
  const pb::Descriptor* d = m.GetDescriptor();
  const pb::Reflection* r = m.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const pb::FieldDescriptor* f = d->field(i);
    if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
      if (f->is_repeated()) {
        for (int j = 0; j < r->FieldSize(m, f); ++j) CheckNs(r->GetRepeatedMessage(m, f, j), delta, times);
      } else if (r->HasField(m, f)) {
        CheckNs(r->GetMessage(m, f), delta, times);
      }
      continue;
    }
    if (!IsNsField(f)) continue;
    const bool time = !kNotTimes.count(f->full_name());
    INFO(f->full_name() << (time ? " is a time" : " is not a time"));
    CHECK(NsOf(m, f) == (time ? kT + delta : kT));
    *times += time;
  }
}

}  // namespace

TEST_CASE("collector: a probe's offset is the root's time minus the midpoint, within rtt/2") {
  auto s = col::SampleOf(1000, 51'000, 1400);  // root clock 50 us ahead, 400 ns round trip
  REQUIRE(s);
  CHECK(s->offset_ns == 51'000 - 1200);
  CHECK(s->rtt_ns == 400);
  auto behind = col::SampleOf(10'000'000'000, 3'000'000'000, 10'000'000'100);
  REQUIRE(behind);
  CHECK(behind->offset_ns == -7'000'000'050);  // a root behind: negative
  CHECK_FALSE(col::SampleOf(2000, 0, 1000));   // answer read before it was sent

  // Legs of random lengths around a true offset: every sample is within its rtt/2, the
  // estimate is the burst's sample with the smallest round trip.
  const int64_t truth = -3'000'000'000;
  std::srand(7);
  col::ClockEstimator est;
  CHECK_FALSE(est.estimate());
  uint64_t t = 100'000'000'000, best_rtt = UINT64_MAX;
  int64_t best_offset = 0;
  for (int i = 0; i < 8; ++i) {
    const uint64_t out = 20'000 + std::rand() % 500'000, back = 20'000 + std::rand() % 500'000;
    const uint64_t root = t + out + truth;
    const auto one = col::SampleOf(t, root, t + out + back);
    CHECK(std::llabs(one->offset_ns - truth) <= static_cast<long long>(one->rtt_ns / 2));
    if (one->rtt_ns < best_rtt) best_rtt = one->rtt_ns, best_offset = one->offset_ns;
    est.Add(t, root, t + out + back);
    t += 10'000'000;
  }
  CHECK(est.burst_samples() == 8);
  CHECK_FALSE(est.estimate());  // not before the burst is over
  est.FinishBurst();
  REQUIRE(est.estimate());
  CHECK(est.estimate()->rtt_ns == best_rtt);
  CHECK(est.estimate()->offset_ns == best_offset);

  // The next burst replaces it even with a worse round trip (drift beats an old sample);
  // an empty burst keeps the last estimate.
  est.Add(t, t + 5, t + 2'000'000);
  est.FinishBurst();
  CHECK(est.estimate()->rtt_ns == 2'000'000);
  est.FinishBurst();
  CHECK(est.estimate()->rtt_ns == 2'000'000);
}

TEST_CASE("collector: ShiftNs keeps unset times unset and clamps at both ends") {
  CHECK(col::ShiftNs(0, 5) == 0);
  CHECK(col::ShiftNs(100, 5) == 105);
  CHECK(col::ShiftNs(100, -40) == 60);
  CHECK(col::ShiftNs(100, -100) == 1);
  CHECK(col::ShiftNs(100, INT64_MIN) == 1);
  CHECK(col::ShiftNs(UINT64_MAX - 1, 5) == UINT64_MAX);
}

TEST_CASE("collector: ShiftFrame moves every time of every frame body, and no duration") {
  // Driven by the schema: a time field added to gpuwatch.proto and not to ShiftFrame
  // fails here (or, if it is not a time, belongs in kNotTimes).
  const pb::Descriptor* frame = wire::Frame::descriptor();
  int times = 0;
  for (int i = 0; i < frame->field_count(); ++i) {
    for (const int64_t delta : {int64_t{1'500'000'000}, int64_t{-2'000'000'000}}) {
      wire::Frame f;
      std::vector<const pb::FieldDescriptor*> seen;
      FillNs(f.GetReflection()->MutableMessage(&f, frame->field(i)), &seen);
      col::ShiftFrame(f, delta);
      CheckNs(f, delta, &times);
    }
  }
  // Hello.start_ns, Event.t_ns, Activity start/end, ProcSample.t_ns, DeviceSample.t_ns,
  // Batch.settled_ns, CuptiWindow start/end, Batch.cupti_window_open_since_ns,
  // Batch.cupti_ended_ns, Goodbye.end_ns, Heartbeat.now_ns, InFlight.since_ns,
  // HostSample.t_ns, and RankDigest.shift_ns (the shift a digest's times get when decoded):
  // 16, each with two deltas.
  CHECK(times == 32);
}

TEST_CASE("collector: a forwarded rank's times are put on this collector's clock at ingest") {
  col::JobTable jobs(col::JobTiming{});
  col::Connection conn(77, jobs, col::Clock::now());
  wire::FrameScratch scratch;
  wire::Frame hello = Hello("j", 2, 4);
  hello.mutable_hello()->set_start_ns(kT);
  hello.mutable_hello()->set_clock_offset_ns(-1'000'000'000);
  hello.mutable_hello()->set_clock_rtt_ns(80'000);
  hello.mutable_hello()->set_via_collector("h1");
  wire::Frame hb;
  hb.mutable_heartbeat()->set_now_ns(kT + 10);
  wire::Frame bye;
  bye.mutable_goodbye()->set_end_ns(kT + 20);
  REQUIRE(conn.OnBytes(Bytes(hello) + Bytes(hb) + Bytes(bye), scratch, col::Clock::now()));
  REQUIRE(conn.rank());
  CHECK(conn.rank()->hello().start_ns() == kT - 1'000'000'000);
  CHECK(conn.rank()->hello().clock_offset_ns() == -1'000'000'000);  // kept for the summary
  CHECK(static_cast<col::RankState*>(conn.rank())->heartbeat().now_ns() == kT + 10 - 1'000'000'000);
}

TEST_CASE("collector: clock probes are answered at once, over TCP only with the job token") {
  const std::string token = "tok-123";
  col::JobTable jobs(col::JobTiming{});
  wire::Frame probe;
  probe.mutable_clock_probe()->set_sent_ns(42);
  probe.mutable_clock_probe()->set_protocol_version(wire::PROTOCOL_VERSION);
  probe.mutable_clock_probe()->set_host("h1");
  wire::FrameScratch scratch;
  {
    col::Connection conn(0, jobs, col::Clock::now());
    conn.RequireToken(&token, "127.0.0.1:5");
    CHECK_FALSE(conn.OnBytes(Bytes(probe), scratch, col::Clock::now()));
    CHECK(conn.error().find("no job token") != std::string::npos);
    CHECK(conn.TakeReplies().empty());
  }
  probe.mutable_clock_probe()->set_token(token);
  col::Connection conn(0, jobs, col::Clock::now());
  conn.RequireToken(&token, "127.0.0.1:5");
  const uint64_t before = col::MonotonicNs();
  wire::Frame second;
  second.mutable_clock_probe()->set_sent_ns(43);  // later probes need not repeat the token
  REQUIRE(conn.OnBytes(Bytes(probe) + Bytes(second), scratch, col::Clock::now()));
  const uint64_t after = col::MonotonicNs();
  CHECK(conn.identified());
  CHECK_FALSE(conn.has_hello());
  CHECK(conn.Describe() == "clock probes of the collector on h1 (TCP 127.0.0.1:5)");
  wire::FrameReader reader;
  reader.Feed(conn.TakeReplies());
  for (uint64_t sent : {42u, 43u}) {
    wire::Frame answer;
    REQUIRE(reader.Next(answer) == wire::FrameReader::Status::kFrame);
    CHECK(answer.clock_probe().sent_ns() == sent);
    CHECK(answer.clock_probe().root_ns() >= before);
    CHECK(answer.clock_probe().root_ns() <= after);
    CHECK(answer.clock_probe().token().empty());
  }
  CHECK(jobs.empty());  // a prober feeds no job
  CHECK_FALSE(conn.OnBytes(Bytes(Hello("j", 0, 1)), scratch, col::Clock::now()));
}
