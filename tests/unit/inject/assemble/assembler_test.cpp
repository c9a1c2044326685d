// The assembler driven by hand: rings filled with made-up records, a fake clock (ticks are
// not ns), fake event pairs and CUPTI records, its own name and communicator tables. Each
// batch it builds is parsed with the generated classes.
#include <catch2/catch.hpp>

#include "assembler_fixture.h"

using namespace assembler_test;  // NOLINT(google-build-using-namespace): the tests' fixture

TEST_CASE("assembler: stamp ticks become CLOCK_MONOTONIC ns, with the ring's thread id") {
  Fixture fx;
  const uint32_t k = fx.names->Intern("_Z6kernelv");
  fx.ring.Push(Launch(100, k));
  const w::Batch b = fx.Assemble();
  CHECK(fx.sent);
  CHECK(b.seq() == 1);
  REQUIRE(b.events_size() == 1);
  CHECK(b.events(0).api() == w::CUDA_LAUNCH_KERNEL);
  CHECK(b.events(0).t_ns() == kEpochNs + 300);
  CHECK(b.events(0).dur_ns() == 6);
  CHECK(b.events(0).tid() == 42);
  CHECK(b.events(0).name_id() == k);
  CHECK(b.events(0).site_id() == 0);
}

TEST_CASE("assembler: a collective is held until its event pair completes, then goes with its GPU time") {
  Fixture fx;
  fx.ring.Push(Collective(100, 5, 4096, false));
  fx.ring.Push(Launch(200, 0));
  w::Batch b = fx.Assemble();
  REQUIRE(b.events_size() == 1);  // the launch only
  CHECK(b.events(0).api() == w::CUDA_LAUNCH_KERNEL);
  CHECK(b.settled_ns() <= kEpochNs + 300);  // the held collective starts there
  CHECK(fx.pairs.queries[5] == 1);
  CHECK(fx.pairs.releases[5] == 0);

  fx.pairs.state[5] = {gi::CollectiveTimes::Poll::kDone, 7000};
  b = fx.Assemble();
  REQUIRE(b.events_size() == 1);
  CHECK(b.events(0).api() == w::NCCL_ALL_REDUCE);
  CHECK(b.events(0).t_ns() == kEpochNs + 300);
  CHECK(b.events(0).gpu_ns() == 7000);
  CHECK(b.events(0).seq() == 100);
  CHECK((b.events(0).flags() & w::FLAG_NO_GPU_TIME) == 0);
  CHECK(fx.pairs.releases[5] == 1);
  CHECK_FALSE(fx.assembler.holding_collectives());
}

TEST_CASE("assembler: with CUPTI live a collective waits for its NCCL kernels, at most a second") {
  Fixture fx;
  fx.cycle.cupti_live = true;
  fx.ring.Push(Collective(100, 1, 8, false));  // host call [kEpochNs + 300, + 30]
  fx.ring.Push(Collective(1000, 2, 8, false));
  fx.pairs.state[1] = {gi::CollectiveTimes::Poll::kDone, 7000};
  fx.pairs.state[2] = {gi::CollectiveTimes::Poll::kDone, 9000};
  w::Batch b = fx.Assemble();
  CHECK(b.events_size() == 0);
  CHECK(fx.assembler.holding_collectives());

  // CUPTI: the launch call inside the first collective's host call, and its NCCL kernel.
  std::vector<gi::ActivityRecord> acts(2);
  acts[0].kind = gi::kActApi;
  acts[0].start_ns = kEpochNs + 310;
  acts[0].correlation_id = 77;
  acts[1].kind = gi::kActKernel;
  acts[1].start_ns = kEpochNs + 2000;
  acts[1].end_ns = kEpochNs + 7000;
  acts[1].correlation_id = 77;
  acts[1].comm_kernel = true;
  acts[1].name_id = fx.names->Intern("ncclDevKernel_AllReduce");
  fx.cycle.poll_activities = [&](const gi::CuptiBudget::Cycle&, const std::function<void(const gi::ActivityRecord&)>& take) {
    for (const auto& a : acts) take(a);
    acts.clear();
  };
  b = fx.Assemble();
  REQUIRE(b.events_size() == 1);
  CHECK(b.events(0).t_ns() == kEpochNs + 300);
  CHECK(b.events(0).gpu_ns() == 5000);  // CUPTI's kernel, not the event pair's 7000
  CHECK((b.events(0).flags() & w::FLAG_KERNEL_TIMED) != 0);  // and it says so (the straggler compares like with like)
  CHECK(b.activities_size() == 2);
  CHECK(b.kernel_names_size() == 1);  // the kernel's name, with the batch that uses it

  fx.time.now_ns += 999'000'000;
  CHECK(fx.Assemble().events_size() == 0);  // the second is still waiting for CUPTI
  fx.time.now_ns += 2'000'000;
  b = fx.Assemble();
  REQUIRE(b.events_size() == 1);  // past a second: the event pair's time
  CHECK(b.events(0).gpu_ns() == 9000);
  CHECK((b.events(0).flags() & w::FLAG_KERNEL_TIMED) == 0);
}

TEST_CASE("assembler: a collective CUPTI times has no pair to poll and takes its kernels' time") {
  Fixture fx;
  fx.cycle.cupti_live = true;
  const uint32_t slot = gi::CollectiveTimer::kCuptiTimed | 7;
  fx.ring.Push(Collective(100, slot, 8, false));  // host call [kEpochNs + 300, + 30]
  fx.ring.Push(Collective(2000, gi::CollectiveTimer::kCuptiTimed | 8, 8, false));
  CHECK(fx.Assemble().events_size() == 0);
  CHECK(fx.pairs.queries.empty());  // never a cudaEventQuery: there is no pair
  std::vector<gi::ActivityRecord> acts(2);
  acts[0].kind = gi::kActApi;
  acts[0].start_ns = kEpochNs + 310;
  acts[0].correlation_id = 5;
  acts[1].kind = gi::kActKernel;
  acts[1].start_ns = kEpochNs + 1000;
  acts[1].end_ns = kEpochNs + 4000;
  acts[1].correlation_id = 5;
  acts[1].comm_kernel = true;
  fx.cycle.poll_activities = [&](const gi::CuptiBudget::Cycle&, const std::function<void(const gi::ActivityRecord&)>& take) {
    for (const auto& a : acts) take(a);
    acts.clear();
  };
  w::Batch b = fx.Assemble();
  REQUIRE(b.events_size() == 1);
  CHECK(b.events(0).gpu_ns() == 3000);
  CHECK(fx.pairs.releases.empty());  // nothing to give back to the pool
  // The second's kernel never comes (CUPTI stopped): after a second, it goes without a time.
  fx.time.now_ns += 1'001'000'000;
  b = fx.Assemble();
  REQUIRE(b.events_size() == 1);
  CHECK((b.events(0).flags() & w::FLAG_NO_GPU_TIME) != 0);
  CHECK((b.events(0).flags() & w::FLAG_KERNEL_TIMED) == 0);
  CHECK(fx.pairs.queries.empty());
}

TEST_CASE("assembler: only the oldest pending pair of a stream is polled") {
  Fixture fx;
  for (uint32_t i = 0; i < 4; ++i) {  // slots 1..4 on stream 9, in order; slot 5 on stream 10
    gi::Record r = Collective(100 + 100 * i, i + 1, 8, false);
    r.stream = 9;
    fx.ring.Push(r);
  }
  gi::Record other = Collective(150, 5, 8, false);
  other.stream = 10;
  fx.ring.Push(other);
  CHECK(fx.Assemble().events_size() == 0);
  CHECK(fx.pairs.queries[1] == 1);
  CHECK(fx.pairs.queries.count(2) == 0);  // behind slot 1 on its stream
  CHECK(fx.pairs.queries[5] == 1);        // another stream: polled too
  fx.pairs.state[1] = {gi::CollectiveTimes::Poll::kDone, 10};
  fx.pairs.state[2] = {gi::CollectiveTimes::Poll::kDone, 20};
  const w::Batch b = fx.Assemble();
  CHECK(b.events_size() == 2);  // 1 and 2 done; 3 pending stops the stream there
  CHECK(fx.pairs.queries[3] == 1);
  CHECK(fx.pairs.queries.count(4) == 0);
}

TEST_CASE("assembler: a group's GPU time is shared among its operations by bytes") {
  Fixture fx;
  fx.ring.Push(Collective(100, 3, 100, true));
  fx.ring.Push(Collective(110, 3, 300, true));
  fx.pairs.state[3] = {gi::CollectiveTimes::Poll::kDone, 4000};
  CHECK(fx.Assemble().events_size() == 0);
  CHECK(fx.pairs.queries[3] == 0);  // the group is open: its pair is not asked yet

  gi::Record end{};
  end.api = gi::kGroupEnd;
  end.event_slot = 3;
  end.t_ticks = 130;
  end.dur_ticks = 5;
  fx.ring.Push(end);
  const w::Batch b = fx.Assemble();
  REQUIRE(b.events_size() == 2);  // the group's end is no event of its own
  CHECK(b.events(0).gpu_ns() == 1000);
  CHECK(b.events(1).gpu_ns() == 3000);
  CHECK(fx.pairs.releases[3] == 1);
}

TEST_CASE("assembler: the last batch releases what it still holds, marked without GPU time") {
  Fixture fx;
  fx.ring.Push(Collective(100, 6, 8, false));
  CHECK(fx.Assemble().events_size() == 0);
  fx.cycle.final = true;
  const w::Batch b = fx.Assemble();
  REQUIRE(b.events_size() == 1);
  CHECK((b.events(0).flags() & w::FLAG_NO_GPU_TIME) != 0);
  CHECK(b.events(0).gpu_ns() == 0);
  CHECK(fx.pairs.releases[6] == 1);
  CHECK_FALSE(fx.assembler.holding_collectives());
}

TEST_CASE("assembler: settled_ns is never after an event still to come") {
  Fixture fx;
  fx.ring.Push(Launch(100, 0));
  SECTION("calls that do not mark themselves: now minus kUntrackedCallNs") {
    CHECK(fx.Assemble().settled_ns() == fx.time.now_ns - gi::Assembler::kUntrackedCallNs);
  }
  SECTION("a call in flight in any ring: its start") {
    gi::Ring other(8);
    other.inflight.since_ticks.store(1000);  // kEpochNs + 3000: well before now - 20 ms
    fx.rings.push_back(&other);
    CHECK(fx.Assemble().settled_ns() == kEpochNs + 3000);
  }
  SECTION("a collective held for its GPU time: its start") {
    fx.ring.Push(Collective(50, 9, 8, false));
    CHECK(fx.Assemble().settled_ns() == kEpochNs + 150);
    fx.pairs.state[9] = {gi::CollectiveTimes::Poll::kDone, 10};
    fx.ring.Push(Launch(400, 0));
    const w::Batch b = fx.Assemble();
    CHECK(b.events_size() == 2);
    CHECK(b.settled_ns() == fx.time.now_ns - gi::Assembler::kUntrackedCallNs);  // nothing held now
  }
}

TEST_CASE("assembler: names, call sites and communicators go once, with the first batch that uses them") {
  Fixture fx;
  const uint32_t k = fx.names->Intern("_Z1kv");
  int comm_handle = 0;
  fx.comms->Register(&comm_handle, 4, 1, 0xabcdef);
  gi::Record sync{};
  sync.api = gi::kApiStreamSynchronize;
  sync.flags = gi::kFlagBlockedHost;
  sync.site_id = k;  // the same number as the kernel's name: another id space
  fx.ring.Push(Launch(1, k));
  fx.ring.Push(Launch(2, k));
  fx.ring.Push(sync);
  w::Batch b = fx.Assemble();
  REQUIRE(b.kernel_names_size() == 1);
  CHECK(b.kernel_names(0).id() == k);
  CHECK(b.kernel_names(0).name() == "_Z1kv");
  REQUIRE(b.call_sites_size() == 1);
  CHECK(b.call_sites(0).id() == k);
  CHECK(b.call_sites(0).frames(0) == "frame-of-site-" + std::to_string(k));
  REQUIRE(b.communicators_size() == 1);
  CHECK(b.communicators(0).nranks() == 4);
  REQUIRE(b.events_size() == 3);
  CHECK(b.events(2).site_id() == k);
  CHECK(b.events(2).name_id() == 0);

  fx.ring.Push(Launch(3, k));
  fx.ring.Push(sync);
  b = fx.Assemble();
  CHECK(b.events_size() == 2);
  CHECK(b.kernel_names_size() == 0);
  CHECK(b.call_sites_size() == 0);
  CHECK(b.communicators_size() == 0);

  SECTION("after the transport lost frames, each is sent again with its next use") {
    fx.cycle.drops.collector_unreachable = 5;  // frames lost: they may have held definitions
    b = fx.Assemble();
    CHECK(b.communicators_size() == 1);
    CHECK(b.kernel_names_size() == 0);  // not used in this batch
    fx.ring.Push(Launch(4, k));
    fx.ring.Push(sync);
    b = fx.Assemble();
    CHECK(b.kernel_names_size() == 1);
    CHECK(b.call_sites_size() == 1);
    CHECK(b.communicators_size() == 0);
  }
}

TEST_CASE("assembler: a batch with nothing new is not sent, and gives its number to the next") {
  Fixture fx;
  fx.Assemble();
  CHECK_FALSE(fx.sent);
  fx.ring.Push(Launch(1, 0));
  const w::Batch b = fx.Assemble();
  CHECK(fx.sent);
  CHECK(b.seq() == 1);
  fx.Assemble();
  CHECK_FALSE(fx.sent);
  fx.ring.Push(Launch(2, 0));
  CHECK(fx.Assemble().seq() == 2);
}

TEST_CASE("assembler: drop counts: ring_full counted in the rings, the others as given, all cumulative") {
  Fixture fx;
  gi::Ring small(8);
  small.tid.store(7);
  fx.rings = {&small};
  for (uint64_t i = 1; i <= 10; ++i) small.Push(Launch(i, 0));
  w::Batch b = fx.Assemble();
  CHECK(b.events_size() == 8);
  REQUIRE(b.dropped_size() == 1);
  CHECK(b.dropped(0).reason() == "ring_full");
  CHECK(b.dropped(0).count() == 2);

  fx.cycle.drops.too_many_threads = 3;  // no data, but a count changed
  b = fx.Assemble();
  CHECK(fx.sent);
  CHECK(b.events_size() == 0);
  REQUIRE(b.dropped_size() == 2);
  CHECK(b.dropped(0).count() == 2);  // cumulative: sent again
  CHECK(b.dropped(1).reason() == "too_many_threads");
  CHECK(b.dropped(1).count() == 3);

  const gi::DropCounts all = gi::Assembler::CountDrops(fx.rings, fx.cycle.drops);
  CHECK(all.ring_full == 2);
  CHECK(all.too_many_threads == 3);
}

TEST_CASE("assembler: the GPU source goes when it is known and again when it changes") {
  Fixture fx;
  CHECK(fx.Assemble().gpu_source() == w::GPU_SOURCE_UNSPECIFIED);
  CHECK_FALSE(fx.sent);
  fx.cycle.gpu_source = static_cast<int>(gi::CuptiReader::Source::kCupti);
  fx.cycle.gpu_source_detail = "CUPTI activity records";
  w::Batch b = fx.Assemble();
  CHECK(fx.sent);
  CHECK(b.gpu_source() == w::GPU_SOURCE_CUPTI);
  CHECK(fx.Assemble().gpu_source() == w::GPU_SOURCE_UNSPECIFIED);
  fx.cycle.gpu_source_detail = "handed over";
  b = fx.Assemble();
  CHECK(b.gpu_source() == w::GPU_SOURCE_CUPTI);
  CHECK(b.gpu_source_detail() == "handed over");
}

namespace {
bool DescribeWithStack(uint32_t id, gi::CallSiteText* out) {
  DescribeFake(id, out);
  out->python_stack = 100 + id;
  return true;
}
bool FakeStack(uint32_t id, std::vector<std::string>* frames) {
  *frames = {"inner.py:" + std::to_string(id) + " in f", "train.py:1 in <module>"};
  return true;
}
}  // namespace

// Issue 16: a call site's Python stack goes with the site, tied to it; a host sample's stack
// goes once, before the first sample that uses it.
TEST_CASE("assembler: Python stacks of call sites and samples go once, with their first use") {
  Fixture fx;
  gi::Assembler a{gi::Assembler::Sources{&fx.time, &fx.pairs, {fx.names.get(), fx.comms.get(), DescribeWithStack, FakeStack}}};
  gi::Record sync{};
  sync.api = gi::kApiStreamSynchronize;
  sync.site_id = 7;
  fx.ring.Push(sync);
  gi::Assembler::Cycle cycle;
  cycle.append_samples = [&a](std::string& batch, const gi::CuptiBudget::Cycle&) {
    a.UseStack(107, batch);  // the site's stack: already sent with it
    a.UseStack(9, batch);
    a.UseStack(9, batch);
  };
  w::Batch b;
  REQUIRE(b.ParseFromString(a.AssembleBatch(fx.rings, cycle).body));
  REQUIRE(b.call_sites_size() == 1);
  REQUIRE(b.python_stacks_size() == 2);
  CHECK(b.python_stacks(0).id() == 107);
  CHECK(b.python_stacks(0).call_site_id() == 7);
  CHECK(b.python_stacks(0).frames(0) == "inner.py:107 in f");
  CHECK(b.python_stacks(0).frames_size() == 2);
  CHECK(b.python_stacks(1).id() == 9);
  CHECK(b.python_stacks(1).call_site_id() == 0);
  REQUIRE(b.ParseFromString(a.AssembleBatch(fx.rings, cycle).body));
  CHECK(b.python_stacks_size() == 0);
}

TEST_CASE("assembler: a communicator's definition goes once, and once more when it is destroyed") {
  Fixture fx;
  int handle = 0;  // stands for the ncclComm_t
  gi::CommInfo* c = fx.comms->Register(&handle, 2, 1, 0xabc,
                                       gi::CommOrigin{.origin = 2, .parent_hash = 0x123, .split_index = 1, .color = 3, .key = 1});
  REQUIRE(c);
  w::Batch b = fx.Assemble();
  REQUIRE(b.communicators_size() == 1);
  CHECK(b.communicators(0).origin() == w::Communicator::ORIGIN_SPLIT);
  CHECK(b.communicators(0).parent_hash() == 0x123);
  CHECK(b.communicators(0).split_index() == 1);
  CHECK(b.communicators(0).ended() == 0);
  CHECK(fx.Assemble().communicators_size() == 0);
  fx.comms->End(&handle, 2);
  CHECK(fx.comms->Find(&handle) == nullptr);  // the pointer may name another one next
  b = fx.Assemble();
  REQUIRE(b.communicators_size() == 1);
  CHECK(b.communicators(0).comm_id() == c->id);
  CHECK(b.communicators(0).ended() == 2);
  CHECK(fx.Assemble().communicators_size() == 0);
}

TEST_CASE("assembler: the latest sync drained is handed to CUPTI's poll, before its records") {
  // The CUPTI reader detaches after a window only once the window's queued work is done: a
  // call that waited for the queue and started after the close says so.
  Fixture fx;
  fx.ring.Push(Launch(10, 0));
  gi::Record sync{};
  sync.api = gi::kApiStreamSynchronize;
  sync.t_ticks = 20;
  sync.dur_ticks = 5;
  fx.ring.Push(sync);
  gi::Record copy{};  // a blocking copy from the host waits for the queue too
  copy.api = gi::kApiMemcpy;
  copy.t_ticks = 40;
  copy.dur_ticks = 5;
  copy.flags = gi::kFlagBlockedHost;
  copy.copy_kind = gi::kCopyD2H;
  fx.ring.Push(copy);
  gi::Record query{};  // an event sync waits for an event that may be older than the close
  query.api = gi::kApiEventSynchronize;
  query.t_ticks = 50;
  fx.ring.Push(query);
  uint64_t seen = 0;
  fx.cycle.poll_activities = [&](const gi::CuptiBudget::Cycle& drained,
                                 const std::function<void(const gi::ActivityRecord&)>&) {
    seen = drained.queue_drained_ns;
  };
  fx.Assemble();
  CHECK(seen == kEpochNs + 40 * 3);  // the copy's start, not the event sync's
  fx.Assemble();
  CHECK(seen == 0);  // nothing drained this cycle
}

TEST_CASE("assembler: a launch carries its kernel, and the sender names it") {
  // The hook stores the kernel it launched (Record::seq); looking its name up there cost a
  // framework's launch 167-384 ns where the job had emptied the caches (hot_path_bench).
  Fixture fx;
  static const char stub = 0, unknown = 0;
  const uint32_t k = fx.names->Register(&stub, "_Z4stubv");
  REQUIRE(k != 0);
  gi::Record named = Launch(10, 0);
  named.seq = reinterpret_cast<uintptr_t>(&stub);
  fx.ring.Push(named);
  gi::Record driver = named;  // the driver's launch carries its handle the same way
  driver.api = gi::kApiDriverLaunchKernel;
  driver.t_ticks = 20;
  fx.ring.Push(driver);
  gi::Record stranger = Launch(30, 0);  // a kernel nobody registered: no name, no id
  stranger.seq = reinterpret_cast<uintptr_t>(&unknown);
  fx.ring.Push(stranger);
  const w::Batch b = fx.Assemble();
  REQUIRE(b.events_size() == 3);
  CHECK(b.events(0).name_id() == k);
  CHECK(b.events(1).name_id() == k);
  CHECK(b.events(2).name_id() == 0);
  CHECK(b.events(0).seq() == 0);  // the pointer is not a sequence number
  REQUIRE(b.kernel_names_size() == 1);
  CHECK(b.kernel_names(0).name() == "_Z4stubv");
}

TEST_CASE("assembler: calls made while CUPTI lingered after a window are counted apart for the budget") {
  // The budget charges them what a disabled, still attached CUPTI adds to a call, and keeps
  // their launch times out of the calls CUPTI's own cost is measured against.
  Fixture fx;
  // Launches at ticks 10, 20, ..., 80: ns kEpochNs + 30, 60, ..., 240.
  for (uint64_t t = 10; t <= 80; t += 10) fx.ring.Push(Launch(t, 0));
  gi::Record graph{};  // a graph launch in a span: counted as lingering, timed with the graphs
  graph.api = gi::kApiGraphLaunch;
  graph.t_ticks = 25;
  fx.ring.Push(graph);
  gi::Record sync{};  // no device work: not counted
  sync.api = gi::kApiStreamSynchronize;
  sync.t_ticks = 26;
  fx.ring.Push(sync);
  fx.cycle.cupti_linger.from[1] = kEpochNs + 60;   // the one before: [60, 120) -> ticks 20, 25, 30
  fx.cycle.cupti_linger.to[1] = kEpochNs + 120;
  fx.cycle.cupti_linger.from[0] = kEpochNs + 210;  // the latest, still lasting -> ticks 70, 80
  fx.cycle.cupti_linger.to[0] = UINT64_MAX;
  gi::CuptiBudget::Cycle seen;
  fx.cycle.poll_activities = [&](const gi::CuptiBudget::Cycle& drained,
                                 const std::function<void(const gi::ActivityRecord&)>&) { seen = drained; };
  fx.Assemble();
  CHECK(seen.enqueues == 9);
  CHECK(seen.linger_enqueues == 5);
  CHECK(seen.linger_launches.count() == 4);
  CHECK(seen.launches.count() == 4);
  CHECK(seen.graph_launches.count() == 1);
  gi::CuptiReader::LingerSpans none;
  CHECK_FALSE(none.Contains(kEpochNs));
}

TEST_CASE("assembler: the latest enqueueing call made wholly while CUPTI recorded is reported to its reader") {
  // The reader waits for that call's API record before it counts a closed window's work as
  // back (enrich/window_work.h): a call that straddled the kinds' switch may have none.
  Fixture fx;
  for (uint64_t t = 10; t <= 80; t += 10) fx.ring.Push(Launch(t, 0));  // ns +30 .. +240, 6 ns each
  gi::Record sync{};  // the latest call, but no device work
  sync.api = gi::kApiStreamSynchronize;
  sync.t_ticks = 85;
  fx.ring.Push(sync);
  fx.cycle.cupti_recorded = {kEpochNs + 60, kEpochNs + 215};  // ticks 20..70; the launch at 70 ends at 216
  gi::CuptiBudget::Cycle seen;
  fx.cycle.poll_activities = [&](const gi::CuptiBudget::Cycle& drained,
                                 const std::function<void(const gi::ActivityRecord&)>&) { seen = drained; };
  fx.Assemble();
  CHECK(seen.recorded_enqueue_ns == kEpochNs + 180);  // tick 60's launch
  // Nothing recorded (CUPTI off, or not started): none.
  for (uint64_t t = 10; t <= 30; t += 10) fx.ring.Push(Launch(t, 0));
  fx.cycle.cupti_recorded = {};
  fx.Assemble();
  CHECK(seen.recorded_enqueue_ns == 0);
}
