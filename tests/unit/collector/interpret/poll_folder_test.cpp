// Polling loops (interpret/poll_folder.h): queries that answered "not ready", closed by one
// that answered ready, become one blocking call from the first query to the last; anything
// else on the thread, another stream, or a pause longer than kPollGapNs breaks a loop.
#include <catch2/catch.hpp>

#include "analyze/rank_model.h"
#include "fixtures.h"
#include "interpret/poll_folder.h"

using namespace gwtest;

namespace {

constexpr uint64_t kUs = 1000;

col::HostCall Query(wire::Api api, uint64_t t, uint64_t dur, bool not_ready, uint64_t stream = 5, uint32_t tid = 1) {
  col::HostCall c{};
  c.api = api;
  c.t_ns = t;
  c.dur_ns = dur;
  c.stream = stream;
  c.tid = tid;
  c.flags = not_ready ? wire::FLAG_NOT_READY : 0;
  c.sync_kind = col::kNotSync;
  return c;
}

}  // namespace

TEST_CASE("collector: a polling loop that spun is one sync from its first query to its last") {
  col::PollFolder p;
  for (int i = 0; i < 10; ++i) {
    col::HostCall q = Query(wire::CUDA_STREAM_QUERY, 1000 * kUs + i * 100 * kUs, 2 * kUs, true);
    p.Fold(q);
    CHECK_FALSE(q.blocks_host);  // the queries inside stay plain calls
  }
  col::HostCall done = Query(wire::CUDA_STREAM_QUERY, 2000 * kUs, 2 * kUs, false);
  p.Fold(done);
  CHECK(done.blocks_host);
  CHECK(done.sync_kind == col::kSyncPoll);
  CHECK(done.t_ns == 1000 * kUs);
  CHECK(done.dur_ns == 1002 * kUs);
  // A query that finds the work done at once is no wait.
  col::HostCall once = Query(wire::CUDA_STREAM_QUERY, 5000 * kUs, 2 * kUs, false);
  p.Fold(once);
  CHECK_FALSE(once.blocks_host);
}

TEST_CASE("collector: a polling loop breaks on other calls, another stream, a long pause, threads apart") {
  col::PollFolder p;
  auto fold = [&](col::HostCall c) {
    p.Fold(c);
    return c;
  };
  fold(Query(wire::CUDA_EVENT_QUERY, 0, kUs, true));
  col::HostCall launch = Query(wire::CUDA_LAUNCH_KERNEL, 10 * kUs, kUs, false);
  fold(launch);
  CHECK_FALSE(fold(Query(wire::CUDA_EVENT_QUERY, 20 * kUs, kUs, false)).blocks_host);

  fold(Query(wire::CUDA_STREAM_QUERY, 100 * kUs, kUs, true, 5));
  CHECK_FALSE(fold(Query(wire::CUDA_STREAM_QUERY, 110 * kUs, kUs, false, 6)).blocks_host);

  fold(Query(wire::CUDA_STREAM_QUERY, 200 * kUs, kUs, true));
  CHECK_FALSE(fold(Query(wire::CUDA_STREAM_QUERY, 200 * kUs + 3 * col::kPollGapNs, kUs, false)).blocks_host);

  // Two threads polling at once: each closes its own loop.
  fold(Query(wire::CUDA_STREAM_QUERY, 10'000 * kUs, kUs, true, 5, 1));
  fold(Query(wire::CUDA_STREAM_QUERY, 10'100 * kUs, kUs, true, 5, 2));
  const col::HostCall a = fold(Query(wire::CUDA_STREAM_QUERY, 10'500 * kUs, kUs, false, 5, 2));
  const col::HostCall b = fold(Query(wire::CUDA_STREAM_QUERY, 10'600 * kUs, kUs, false, 5, 1));
  CHECK(a.blocks_host);
  CHECK(a.t_ns == 10'100 * kUs);
  CHECK(b.blocks_host);
  CHECK(b.t_ns == 10'000 * kUs);
}

TEST_CASE("collector: a polling loop counts as sync time in the rank's figures") {
  wire::Batch b;
  for (int i = 0; i < 5; ++i) {
    auto* e = Add(&b, wire::CUDA_EVENT_QUERY, 1'000'000 + i * 200'000, 1000);
    e->set_flags(wire::FLAG_NOT_READY);
    e->set_tid(3);
  }
  Add(&b, wire::CUDA_EVENT_QUERY, 2'000'000, 1000)->set_tid(3);
  col::RankModel m;
  m.OnBatch(b);
  const col::RankResult& r = m.Result();
  CHECK(r.sync.TotalCount() == 1);
  CHECK(r.sync.TotalNs() == 1'001'000);
  CHECK(r.sync.kind_count[col::kSyncPoll] == 1);
  CHECK(r.api_calls.by_api.at(wire::CUDA_EVENT_QUERY).count == 6);
  CHECK(r.api_calls.by_api.at(wire::CUDA_EVENT_QUERY).not_ready == 5);
}
