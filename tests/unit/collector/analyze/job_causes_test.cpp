// A wait is charged to what it waits for, at rank and job level alike: the job's analysis
// takes a rank's waits for a straggler, or for a slow pipeline stage, out of its
// `communication` finding and gives the rank a finding naming that cause; the job's
// findings and every rank's agree. Hand-made ranks; their `communication` findings hold the
// waits, as a rank's own rule (which sees only its own calls) measures them.
#include <catch2/catch.hpp>

#include "findings_lookup.h"
#include "analyze/findings.h"
#include "analyze/job_result.h"
#include "analyze/rank_result.h"
#include "report/comms_text.h"

namespace col = gpuwatch::collector;

namespace {

constexpr uint64_t kUs = 1000, kMs = 1000 * kUs;

void Steps(col::RankResult& r, int n, uint64_t step_ns) {
  for (int s = 0; s < n; ++s) {
    col::StepRec st;
    st.start = s * step_ns;
    st.end = st.start + step_ns;
    r.steps.steps.push_back(st);
  }
  r.found.total = n;
}

col::Finding Communication(double lost_s, double base_s) {
  col::Finding f = col::MakeFinding("communication", lost_s, base_s);
  f.evidence = {{"exposed_comm_s", lost_s}};
  return f;
}

using gpuwatch::collector::test::Find;

}  // namespace

TEST_CASE("job causes: a rank that waited for the straggler shows the straggler, not communication") {
  // 3 ranks, 20 steps of 30 ms; rank 2 calls each all-reduce 10 ms late: ranks 0 and 1 wait
  // 10 ms in each, 0.2 s in all, which their own rule counted as exposed communication.
  std::vector<col::RankResult> ranks(3);
  for (int r = 0; r < 3; ++r) {
    ranks[r].rank = r;
    ranks[r].host = "node1";
    Steps(ranks[r], 20, 30 * kMs);
    for (uint64_t s = 0; s < 20; ++s)
      ranks[r].collectives.sample.push_back({42, s, s * 30 * kMs + 5 * kMs + (r == 2 ? 10 * kMs : 0), (r == 2 ? 1 : 11) * kMs});
    ranks[r].findings = {Communication(r == 2 ? 0.02 : 0.22, 0.6)};
  }
  std::vector<std::vector<col::Finding>> per;
  const auto job = col::JobFindings(ranks, &per);
  REQUIRE(!job.empty());
  CHECK(job[0].id == "straggler");
  // The job's time lost is the ranks' mean wait: the waits sum to it over the ranks.
  CHECK(job[0].evidence["waits_sum_s"].get<double>() == Approx(0.4));
  CHECK(job[0].time_lost_s * 3 == Approx(0.4));
  const col::Finding* jc = Find(job, "communication");
  if (jc) CHECK(jc->severity == "low");
  REQUIRE(per.size() == 3);
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r);
    const col::Finding* s = Find(per[r], "straggler");
    REQUIRE(s);
    CHECK(per[r][0].id == "straggler");
    CHECK(s->ranks == std::vector<int>{2});
    CHECK(s->time_lost_s == Approx(0.2));
    CHECK(s->severity == "high");
    const col::Finding* c = Find(per[r], "communication");
    REQUIRE(c);  // 20 ms of transfer is left
    CHECK(c->time_lost_s == Approx(0.02));
    CHECK(c->severity == "low");
    CHECK(c->evidence["straggler_wait_s"].get<double>() == Approx(0.2));
  }
  CHECK(Find(per[2], "straggler") == nullptr);  // the straggler waited for nobody
  // The rank's own result is left as its rule made it.
  CHECK(ranks[0].findings[0].time_lost_s == Approx(0.22));
}

namespace {

// A 4-stage pipeline, one rank a stage, 10 steps of 10 ms: each step recv -> compute -> send.
// Stage 2 is slow: stages 0 and 1 wait 4 ms in each send (it posts its recv late), stage 3
// 4 ms in each recv. Every transfer takes 50 us.
std::vector<col::RankResult> Pipeline() {
  std::vector<col::RankResult> ranks(4);
  const uint64_t t = 50 * kUs, w = 4 * kMs;
  for (int r = 0; r < 4; ++r) {
    col::RankResult& x = ranks[r];
    x.rank = r;
    x.host = "node1";
    Steps(x, 10, 10 * kMs);
    auto link = [&](bool send, int peer, uint64_t gpu) {
      col::P2pLink l;
      l.comm_hash = 0x99;
      l.comm_rank = r;
      l.comm_size = 4;
      l.peer = peer;
      l.send = send;
      l.count = l.timed = 10;
      l.bytes = 10 << 20;
      l.call_gpu_ns.assign(10, gpu);
      l.gpu_ns = 10 * gpu;
      return l;
    };
    if (r > 0) x.pipeline.links.push_back(link(false, r - 1, r == 3 ? t + w : t));
    if (r < 3) x.pipeline.links.push_back(link(true, r + 1, r < 2 ? t + w : t));
    x.findings = {Communication(r == 2 ? 0.001 : 0.041, 0.1)};
  }
  return ranks;
}

}  // namespace

TEST_CASE("job causes: sends and recvs blocked by a slow stage are its bubble, upstream and downstream") {
  const std::vector<col::RankResult> ranks = Pipeline();
  const col::JobPipeline jp = col::MatchPipeline(ranks);
  REQUIRE(jp.links.size() == 3);
  for (const auto& l : jp.links) {
    INFO(l.from << " -> " << l.to);
    CHECK(l.matched == 10);
    CHECK(l.send_wait_s == Approx(l.to == 2 || l.to == 1 ? 0.04 : 0.0));
    CHECK(l.recv_wait_s == Approx(l.from == 2 ? 0.04 : 0.0));
  }
  std::vector<std::vector<col::Finding>> per;
  const auto job = col::JobFindings(ranks, &per);
  REQUIRE(!job.empty());
  INFO(job[0].summary);
  CHECK(job[0].id == "pipeline_bubble");
  CHECK(job[0].ranks == std::vector<int>{2});
  CHECK(job[0].evidence["slow_stage"] == 2);
  CHECK(job[0].time_lost_s == Approx(3 * 0.04 / 4));  // the waits' mean over the ranks
  CHECK(job[0].evidence["send_wait_s_by_rank"]["1"].get<double>() == Approx(0.04));
  CHECK(job[0].evidence["recv_wait_s_by_rank"]["3"].get<double>() == Approx(0.04));
  const col::Finding* jc = Find(job, "communication");
  if (jc) CHECK(jc->severity == "low");
  for (int r : {0, 1, 3}) {
    INFO("rank " << r);
    CHECK(per[r][0].id == "pipeline_bubble");
    CHECK(per[r][0].ranks == std::vector<int>{2});
    CHECK(per[r][0].time_lost_s == Approx(0.04));
    const col::Finding* c = Find(per[r], "communication");
    CHECK((c == nullptr || c->severity == "low"));
  }
  CHECK(Find(per[2], "pipeline_bubble") == nullptr);  // the slow stage waits for nobody
}

TEST_CASE("job causes: the communicator table shows each member's mean, and says so") {
  std::vector<col::RankResult> ranks(2);
  for (int r = 0; r < 2; ++r) {
    ranks[r].rank = r;
    col::CommFigures c;
    c.hash = 0x5;
    c.identified = true;
    c.nranks = 2;
    c.rank = r;
    c.kernels = 10;
    c.kernel_ns = 600 * kMs;  // each rank: 0.6 s of NCCL kernels, all exposed
    c.ops[0].count = 10;
    c.ops[0].timed.Note(10 << 20, 600 * kMs);
    ranks[r].comms.comms = {c};
  }
  const col::JobResult j = col::MergeRanks(ranks);
  std::string text;
  col::AppendCommsText(j, text);
  INFO(text);
  CHECK(text.find("per rank") != std::string::npos);
  CHECK(text.find("600.000 ms") != std::string::npos);
  CHECK(text.find("1.200 s") == std::string::npos);
}
