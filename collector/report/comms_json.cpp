// See comms_json.h.
#include "report/comms_json.h"

#include <algorithm>

#include "common/format.h"
#include "common/thresholds.h"

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

// The keys a rank's entry and the job's share; `wait` per op.
nlohmann::json CommFiguresJson(const CommFigures& c, const RankWaits::PerOp& wait) {
  nlohmann::json ops = nlohmann::json::object();
  for (size_t i = 0; i < c.ops.size(); ++i) {
    const CollectiveFigures::Op& o = c.ops[i];
    if (!o.count) continue;
    nlohmann::json e = {{"count", o.count}, {"bytes", o.bytes}, {"gpu_s", Seconds(o.timed.ns)}};
    AddOpBandwidthJson(o, wait[i], e);
    ops[kCollOps[i].name] = std::move(e);
  }
  const CollectiveFigures::Op t = c.Total();
  const CommFacts& f = c.facts;
  nlohmann::json made = {{"origin", OriginName(f.origin)}};
  if (f.origin == wire::Communicator::ORIGIN_SPLIT)
    made.update({{"parent", CommIdText(f.parent_hash)}, {"split_index", f.split_index}, {"color", f.color}, {"key", f.key}});
  const char* ended = EndedName(f.ended);
  nlohmann::json e = {{"id", CommIdText(c.hash)},
                      {"identified", c.identified},
                      {"nranks", c.nranks},
                      {"calls", t.count},
                      {"bytes", t.bytes},
                      {"gpu_s", Seconds(t.timed.ns)}};
  AddOpBandwidthJson(t, Sum(wait), e);
  e.update({{"kernels", c.kernels},
            {"kernel_s", Seconds(c.kernel_ns)},
            {"overlapped_s", Seconds(c.overlapped_ns)},
            {"exposed_s", Seconds(c.ExposedNs())},
            {"ops", ops},
            {"made", made},
            {"ended", ended ? nlohmann::json(ended) : nlohmann::json(nullptr)}});
  return e;
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

void AddOpBandwidthJson(const CollectiveFigures::Op& o, uint64_t wait_ns, nlohmann::json& e) {
  e["wait_s"] = Seconds(wait_ns);
  e["transfer_s"] = Seconds(o.TransferNs(wait_ns));
  const bool crossed = o.timed.count > o.local.count && o.TransferNs(wait_ns);
  e["algbw_gbps"] = crossed ? nlohmann::json(o.algbw(wait_ns)) : nlohmann::json(nullptr);
  e["busbw_gbps"] = crossed ? nlohmann::json(o.busbw(wait_ns)) : nlohmann::json(nullptr);
  e["one_member_calls"] = o.local.count;
  if (o.only_local())
    e["bandwidth_note"] = "one-member communicator: nothing crosses a link (NCCL copies within the device), so no "
                          "algbw or busbw";
  else if (o.local.count)
    e["bandwidth_note"] = "calls on one-member communicators (a copy within the device) are left out of algbw and busbw";
}

void NoteAboveLinkPeak(double peak_gbps, nlohmann::json& collectives) {
  if (peak_gbps <= 0) return;
  for (auto& [op, e] : collectives.items()) {
    const nlohmann::json& algbw = e["algbw_gbps"];
    if (!algbw.is_number() || algbw.get<double>() <= kAboveLinkPeak * peak_gbps) continue;
    e["bandwidth_note"] = Printf("algbw above the %.1f GB/s each way of the device's links as NVML reports them: the "
                                 "calls' GPU time reads shorter than their transfer (NCCL's kernels ended before the "
                                 "copy did, or the timeline missed part of them)",
                                 peak_gbps);
  }
}

nlohmann::json RankCommsJson(const RankResult& r, const RankWaits* waits) {
  static const RankWaits kNone;
  nlohmann::json a = nlohmann::json::array();
  for (const CommFigures& c : r.comms.comms) {
    nlohmann::json e = CommFiguresJson(c, (waits ? *waits : kNone).Comm(c.hash));
    e["rank_in_comm"] = c.rank;
    a.push_back(std::move(e));
  }
  return a;
}

nlohmann::json JobCommsJson(const JobResult& j) {
  nlohmann::json a = nlohmann::json::array();
  for (const JobComm& c : j.by_comm) {
    nlohmann::json e = CommFiguresJson(c.figures, c.wait_ns);
    // Times and counts are the ranks' sums; the mean per rank is what one member spent.
    const double n = static_cast<double>(std::max<size_t>(c.ranks_reporting, 1));
    e["figures"] = "sums over the ranks reporting; per_rank: their mean";
    e["per_rank"] = {{"gpu_s", Seconds(c.figures.Total().timed.ns) / n},
                     {"kernel_s", Seconds(c.figures.kernel_ns) / n},
                     {"exposed_s", Seconds(c.figures.ExposedNs()) / n},
                     {"overlapped_s", Seconds(c.figures.overlapped_ns) / n},
                     {"wait_s", Seconds(Sum(c.wait_ns)) / n}};
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
