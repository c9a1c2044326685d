// Per-communicator figures: the overlap of NCCL kernels with compute kernels on a made-up
// timeline, communicators joined across ranks by identity (members, kind; a pointer-keyed
// one never joined), and the straggler found inside one tensor-parallel pair.
#include <catch2/catch.hpp>

#include "analyze/comm_overlap.h"
#include "analyze/communicators.h"
#include "analyze/findings.h"
#include "analyze/rank_result.h"

namespace wire = gpuwatch::wire;
namespace dg = gpuwatch::collector;

namespace {

constexpr uint64_t kUs = 1000, kMs = 1000 * kUs;

dg::HostCall Coll(uint64_t t, uint64_t hash, bool identified = true, int nranks = 2, int rank = 0) {
  dg::HostCall c{};
  c.t_ns = t;
  c.dur_ns = 10 * kUs;
  c.api = wire::NCCL_ALL_REDUCE;
  c.comm_hash = hash;
  c.comm_identified = identified;
  c.comm_nranks = nranks;
  c.comm_rank = rank;
  c.bytes = c.coll_bytes = 1 << 20;
  c.gpu_ns = 100 * kUs;
  c.timed = true;
  return c;
}

dg::DeviceWork Kernel(uint64_t start, uint64_t end, bool comm, const dg::ApiSpan* api = nullptr) {
  dg::DeviceWork w{};
  w.start_ns = start;
  w.end_ns = end;
  w.kind = wire::ACTIVITY_KERNEL;
  w.comm = comm;
  w.api = api;
  return w;
}

}  // namespace

TEST_CASE("comm overlap: an NCCL kernel's time during compute kernels is overlapped, the rest exposed") {
  dg::CommOverlap o;
  o.OnStep({0, 10 * kMs, true});
  o.OnHostCall(Coll(1 * kMs, 0xa));
  o.OnHostCall(Coll(5 * kMs, 0xb));
  const dg::ApiSpan a{1 * kMs + 5 * kUs, 1 * kMs + 8 * kUs}, b{5 * kMs + 5 * kUs, 5 * kMs + 8 * kUs};
  // comm a [2, 4) ms beside compute [1, 3) and [3.5, 6): 1 + 0.5 ms hidden, 0.5 ms exposed.
  o.OnDeviceWork(Kernel(1 * kMs, 3 * kMs, false));
  o.OnDeviceWork(Kernel(2 * kMs, 4 * kMs, true, &a));
  o.OnDeviceWork(Kernel(3500 * kUs, 6 * kMs, false));
  // comm b [7, 8) ms alone: exposed; a step later, [12, 13) ms of comm b goes to step 2.
  o.OnDeviceWork(Kernel(7 * kMs, 8 * kMs, true, &b));
  o.OnDeviceWork(Kernel(12 * kMs, 13 * kMs, true, &b));
  o.OnStep({11 * kMs, 20 * kMs, true});
  const dg::OverlapFigures f = o.Result();
  CHECK(f.total.kernels == 3);
  CHECK(f.total.nccl_ns == 4 * kMs);
  CHECK(f.total.overlapped_ns == 1500 * kUs);
  CHECK(f.by_comm.at(0xa).overlapped_ns == 1500 * kUs);
  CHECK(f.by_comm.at(0xa).ExposedNs() == 500 * kUs);
  CHECK(f.by_comm.at(0xb).nccl_ns == 2 * kMs);
  CHECK(f.by_comm.at(0xb).overlapped_ns == 0);
  REQUIRE(f.per_step.size() == 2);
  CHECK(f.per_step[0].nccl_ns == 3 * kMs);
  CHECK(f.per_step[1].nccl_ns == 1 * kMs);
}

TEST_CASE("communicators: joined by identity into members and kind, a pointer-keyed one stays apart") {
  // 4 ranks, tp 2: TP pairs {0,1} {2,3}, DP pairs {0,2} {1,3}, the world.
  std::vector<dg::RankResult> ranks(4);
  for (int r = 0; r < 4; ++r) {
    dg::CommCounter c;
    c.OnHostCall(Coll(1 * kMs, 0x100, true, 4, r));                // world
    c.OnHostCall(Coll(2 * kMs, 0x200 + r / 2, true, 2, r % 2));    // tp
    c.OnHostCall(Coll(3 * kMs, 0x300 + r % 2, true, 2, r / 2));    // dp
    c.OnHostCall(Coll(4 * kMs, 0xdead, false, 2, r % 2));          // the same pointer everywhere
    ranks[r].rank = r;
    ranks[r].comms = c.Result(dg::RankFacts());
  }
  const auto comms = dg::JoinCommunicators(ranks);
  std::map<std::string, std::string> kinds;
  int unknown = 0;
  for (const auto& c : comms) {
    if (!c.identified) {
      ++unknown;
      CHECK(c.kind == "unknown");
      CHECK(c.ranks_reporting == 1);
      continue;
    }
    kinds[dg::MembersLabel(c.members)] = c.kind;
    CHECK(c.figures.Total().count == static_cast<uint64_t>(c.nranks));
  }
  CHECK(unknown == 4);
  CHECK(kinds == std::map<std::string, std::string>{
                     {"0,1,2,3", "world"}, {"0,1", "tp"}, {"2,3", "tp"}, {"0,2", "dp"}, {"1,3", "dp"}});
}

TEST_CASE("communicators: a size no job has leaves the member list empty, the job's lists stay bounded") {
  // A malformed stream's communicator of 2^31 - 1 ranks, beside a real pair.
  std::vector<dg::RankResult> ranks(2);
  for (int r = 0; r < 2; ++r) {
    dg::CommCounter c;
    c.OnHostCall(Coll(1 * kMs, 0x100 + r, true, 0x7fffffff, r));
    c.OnHostCall(Coll(2 * kMs, 0x200, true, 2, r));
    ranks[r].rank = r;
    ranks[r].comms = c.Result(dg::RankFacts());
  }
  const auto comms = dg::JoinCommunicators(ranks);
  REQUIRE(comms.size() == 3);
  size_t slots = 0;
  for (const auto& c : comms) {
    slots += c.members.size();
    if (c.hash == 0x200) CHECK(dg::MembersLabel(c.members) == "0,1");
    else CHECK(c.members.empty());
  }
  CHECK(slots <= dg::kMaxListedMembers);
}

namespace {

// 4 ranks in TP pairs, 30 ms steps; rank 3 reaches the pair {2,3}'s all-reduces 10 ms late,
// rank 0 reaches the pair {0,1}'s `lag01` late. The job's findings.
std::vector<dg::Finding> TpPairs(uint64_t lag01) {
  std::vector<dg::RankResult> ranks(4);
  for (int r = 0; r < 4; ++r) {
    ranks[r].rank = r;
    ranks[r].host = "node1";
    dg::CommCounter c;
    for (uint64_t s = 0; s < 20; ++s) {
      dg::StepRec st;
      st.start = s * 30 * kMs;
      st.end = st.start + 30 * kMs;
      ranks[r].steps.steps.push_back(st);
      const uint64_t late = r == 3 ? 10 * kMs : r == 0 ? lag01 : 0;
      const uint64_t waited = r == 2 ? 10 * kMs : r == 1 ? lag01 : 0;
      const uint64_t hash = 0x200 + r / 2;
      ranks[r].collectives.sample.push_back({hash, s, st.start + 5 * kMs + late, 1 * kMs + waited});
      c.OnHostCall(Coll(st.start + 5 * kMs + late, hash, true, 2, r % 2));
    }
    ranks[r].comms = c.Result(dg::RankFacts());
    ranks[r].found.total = 20;
  }
  for (auto& r : ranks) r.findings = dg::RankFindings(r);
  return dg::JobFindings(ranks);
}

const dg::Finding* StragglerOf(const std::vector<dg::Finding>& f) {
  for (const auto& x : f)
    if (x.id == "straggler") return &x;
  return nullptr;
}

}  // namespace

TEST_CASE("stragglers: a slow rank inside one TP pair is that pair's straggler, with its peer's wait") {
  const auto f = TpPairs(0);
  const dg::Finding* s = StragglerOf(f);
  REQUIRE(s);
  CHECK(s->ranks == std::vector<int>{3});
  CHECK(s->evidence["comm"]["members"] == nlohmann::json::array({2, 3}));
  CHECK(s->evidence["comm"]["kind"] == "tp");
  CHECK(s->evidence["wait_s_by_rank"].size() == 2);
  CHECK(s->evidence["wait_s_by_rank"]["2"].get<double>() == Approx(0.2));
  CHECK(s->evidence["peers_wait_s"].get<double>() == Approx(0.2));
  CHECK(s->evidence["by_comm"].size() == 1);
}

TEST_CASE("stragglers: a pair whose last caller costs its peer under a tenth of the step is not listed") {
  // Host scheduling on a loaded machine alone made a healthy pair's rank last in 73% of its
  // calls with its peer waiting over 5% of the step; a tenth of the step is the floor.
  for (const uint64_t lag : {2 * kMs, 4 * kMs}) {  // 6.7% and 13% of the 30 ms step
    const auto f = TpPairs(lag);
    const dg::Finding* s = StragglerOf(f);
    INFO("pair {0,1} lag " << lag / kMs << " ms");
    REQUIRE(s);
    CHECK(s->ranks == std::vector<int>{3});  // the pair {2,3} still leads
    const nlohmann::json& by = s->evidence["by_comm"];
    CHECK(by.size() == (lag == 4 * kMs ? 2u : 1u));
    if (by.size() == 2) {
      CHECK(by[1]["straggler"] == 0);
      CHECK(by[1]["members"] == nlohmann::json::array({0, 1}));
      CHECK(by[1]["wait_s_by_rank"]["1"].get<double>() == Approx(20 * 0.004));
    }
  }
}
