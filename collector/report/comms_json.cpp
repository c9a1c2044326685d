// See comms_json.h.
#include "report/comms_json.h"

#include <algorithm>

#include "common/format.h"

namespace gpuwatch::collector {
namespace {


const char* OriginName(int origin) {
  switch (origin) {
    case wire::Communicator::ORIGIN_INIT_RANK: return "init";
    case wire::Communicator::ORIGIN_SPLIT: return "split";
    case wire::Communicator::ORIGIN_INIT_ALL: return "init_all";
    case wire::Communicator::ORIGIN_FIRST_USE: return "first_use";
    default: return "unsaid";
  }
}

const char* EndedName(uint32_t ended) { return ended == 1 ? "destroyed" : ended == 2 ? "aborted" : nullptr; }

// The keys a rank's entry and the job's share.
nlohmann::json CommFiguresJson(const CommFigures& c) {
  nlohmann::json ops = nlohmann::json::object();
  for (size_t i = 0; i < c.ops.size(); ++i) {
    const CollectiveFigures::Op& o = c.ops[i];
    if (!o.count) continue;
    ops[kCollOps[i].name] = {{"count", o.count},         {"bytes", o.bytes},          {"gpu_s", Seconds(o.timed.ns)},
                             {"algbw_gbps", o.algbw()}, {"busbw_gbps", o.busbw()}};
  }
  const CollectiveFigures::Op t = c.Total();
  const CommFacts& f = c.facts;
  nlohmann::json made = {{"origin", OriginName(f.origin)}};
  if (f.origin == wire::Communicator::ORIGIN_SPLIT)
    made.update({{"parent", CommIdText(f.parent_hash)}, {"split_index", f.split_index}, {"color", f.color}, {"key", f.key}});
  const char* ended = EndedName(f.ended);
  return {{"id", CommIdText(c.hash)},
          {"identified", c.identified},
          {"nranks", c.nranks},
          {"calls", t.count},
          {"bytes", t.bytes},
          {"gpu_s", Seconds(t.timed.ns)},
          {"busbw_gbps", t.busbw()},
          {"kernels", c.kernels},
          {"kernel_s", Seconds(c.kernel_ns)},
          {"overlapped_s", Seconds(c.overlapped_ns)},
          {"exposed_s", Seconds(c.ExposedNs())},
          {"ops", ops},
          {"made", made},
          {"ended", ended ? nlohmann::json(ended) : nlohmann::json(nullptr)}};
}

nlohmann::json TallyJson(const OverlapTally& t) {
  return {{"kernels", t.kernels},
          {"nccl_kernel_s", Seconds(t.nccl_ns)},
          {"overlapped_s", Seconds(t.overlapped_ns)},
          {"exposed_s", Seconds(t.ExposedNs())},
          {"overlapped_share", t.nccl_ns ? static_cast<double>(t.overlapped_ns) / t.nccl_ns : 0.0}};
}

double Pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

}  // namespace

std::string CommIdText(uint64_t hash) { return Printf("%016llx", static_cast<unsigned long long>(hash)); }

nlohmann::json RankCommsJson(const RankResult& r) {
  nlohmann::json a = nlohmann::json::array();
  for (const CommFigures& c : r.comms.comms) {
    nlohmann::json e = CommFiguresJson(c);
    e["rank_in_comm"] = c.rank;
    a.push_back(std::move(e));
  }
  return a;
}

nlohmann::json JobCommsJson(const JobResult& j) {
  nlohmann::json a = nlohmann::json::array();
  for (const JobComm& c : j.by_comm) {
    nlohmann::json e = CommFiguresJson(c.figures);
    e["id"] = CommIdText(c.hash);
    e["identified"] = c.identified;
    e["nranks"] = c.nranks;
    e["members"] = c.members;
    e["kind"] = c.kind;
    e["ranks_reporting"] = c.ranks_reporting;
    a.push_back(std::move(e));
  }
  return a;
}

// Per step: the first steps' figures and the spread over the kept ones. Under the overhead
// budget only the steps a window held whole have figures: the others are null in the lists and
// left out of the spread (they once made a sampled run's median exposed time 0).
nlohmann::json RankOverlapJson(const RankResult& r) {
  nlohmann::json o = TallyJson(r.overlap.total);
  std::vector<double> exposed, overlapped;
  nlohmann::json first_exposed = nlohmann::json::array(), first_overlapped = nlohmann::json::array();
  constexpr size_t kListed = 100;
  const auto& per_step = r.overlap.per_step;
  for (size_t k = 0; k < per_step.size(); ++k) {
    const bool whole = k >= r.steps.steps.size() || r.steps.steps[k].covered;
    const double e = Millis(Seconds(per_step[k].ExposedNs())), v = Millis(Seconds(per_step[k].overlapped_ns));
    if (whole) exposed.push_back(e), overlapped.push_back(v);
    if (k < kListed) {
      first_exposed.push_back(whole ? nlohmann::json(e) : nlohmann::json(nullptr));
      first_overlapped.push_back(whole ? nlohmann::json(v) : nlohmann::json(nullptr));
    }
  }
  o["per_step"] = {{"steps", exposed.size()},
                   {"exposed_ms", {{"median", Pct(exposed, 0.5)}, {"p90", Pct(exposed, 0.9)}, {"max", Pct(exposed, 1.0)}}},
                   {"overlapped_ms", {{"median", Pct(overlapped, 0.5)}, {"p90", Pct(overlapped, 0.9)}, {"max", Pct(overlapped, 1.0)}}},
                   {"first_exposed_ms", std::move(first_exposed)},
                   {"first_overlapped_ms", std::move(first_overlapped)}};
  return o;
}

nlohmann::json JobOverlapJson(const JobResult& j) { return TallyJson(j.overlap); }

}  // namespace gpuwatch::collector
