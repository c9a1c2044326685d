// steps: the diagnosis section (issue 6). Per rank: `steps` and `findings`; job level:
// `steps` (median over ranks), `findings` (ranked, straggler included) and `verdict`.
// The job instance's WriteText is the verdict and the ranked findings, which
// report/summary_text.cpp prints first.
#include <algorithm>
#include <optional>

#include "analyze/analysis.h"
#include "analyze/findings.h"
#include "analyze/steps.h"
#include "report/format.h"

namespace gpuwatch::collector {
namespace {

class StepsAnalysis final : public RankAnalysis {
 public:
  const char* name() const override { return "steps"; }
  void OnHello(const wire::Hello& h) override { c_.OnHello(h); }
  void OnBatch(const wire::Batch& b) override { c_.OnBatch(b); }
  void OnGoodbye(const wire::Goodbye&) override { c_.OnGoodbye(); }
  // The job's totals live while the job's ranks take no batch (a summary being written),
  // so the job points at each rank's cached result rather than copying it.
  void Merge(const RankAnalysis& other) override {
    job_ = true;
    ranks_.push_back(&static_cast<const StepsAnalysis&>(other).c_.Result());
    findings_.reset();
  }

  void WriteJson(nlohmann::json& obj) const override {
    if (!job_) {
      const diag::RankDiag& d = c_.Result();
      obj["steps"] = diag::StepsJson(d);
      obj["findings"] = diag::FindingsJson(diag::RankFindings(d));
      obj["environment"] = diag::EnvJson(d.env);
      return;
    }
    const auto& f = JobFindings();
    std::vector<uint64_t> counts;
    std::vector<double> med;
    std::string source = ranks_.empty() ? "none" : ranks_[0].step_source;
    for (const auto& r : ranks_) {
      counts.push_back(r.steps_total);
      med.push_back(r.StepMedianS());
      if (r.step_source != source) source = "mixed";
    }
    std::sort(med.begin(), med.end());
    obj["steps"] = {{"count", diag::Percentile(counts, 0.5)},
                    {"source", source},
                    {"median_ms", med.empty() ? 0.0 : med[med.size() / 2] * 1e3}};
    obj["findings"] = diag::FindingsJson(f);
    obj["verdict"] = diag::Verdict(ranks_, f);
  }

  // Each rank's steps on its "steps" track, and each finding as an instant on the ranks it
  // names, where their steps begin (the findings are totals over the run, not events).
  void MarkTrace(TraceMarks& marks) const override {
    if (!job_) return;
    const auto& findings = JobFindings();
    for (const auto& r : ranks_) {
      std::vector<std::pair<uint64_t, uint64_t>> steps;
      steps.reserve(r.steps.size());
      for (const auto& s : r.steps) steps.emplace_back(s.start, s.end);
      marks.Steps(r.rank, r.host, steps, 0);  // the kept steps are the first ones
      const uint64_t at = !r.steps.empty() ? r.steps.front().start : r.host_first;
      for (const auto& f : findings)
        if (std::find(f.ranks.begin(), f.ranks.end(), r.rank) != f.ranks.end())
          marks.Instant(r.rank, r.host, f.id, at,
                        Printf("finding: %s (%s, %s lost): %s", f.title.c_str(),
                               f.severity.c_str(), FmtDuration(f.time_lost_s).c_str(),
                               f.summary.c_str()));
    }
  }

  void WriteText(std::string& out) const override {
    if (job_) {
      out += diag::FindingsText(ranks_, JobFindings());
      return;
    }
    const diag::RankDiag& d = c_.Result();
    if (d.steps_total)
      out += Printf("  steps %llu (%s): median %s, p90 %s\n",
                    static_cast<unsigned long long>(d.steps_total), Clip(d.step_source, 30).c_str(),
                    FmtDuration(d.StepPercentileNs(0.5) * 1e-9).c_str(),
                    FmtDuration(d.StepPercentileNs(0.9) * 1e-9).c_str());
    else
      out += "  steps: none found (no NVTX step range, no repeating pattern)\n";
    const auto f = diag::RankFindings(d);
    for (size_t i = 0; i < f.size() && i < 3; ++i)
      out += Clip(Printf("    %s %s: %s (%.0f%%)", f[i].severity.c_str(), f[i].id.c_str(),
                         FmtDuration(f[i].time_lost_s).c_str(), 100 * f[i].share),
                  kTextWidth) + "\n";
  }

 private:
  // The job's findings, computed once for the JSON, the text and the trace.
  const std::vector<diag::Finding>& JobFindings() const {
    if (!findings_) findings_ = diag::JobFindings(ranks_);
    return *findings_;
  }

  diag::StepsCollector c_;
  bool job_ = false;
  diag::RankList ranks_;
  mutable std::optional<std::vector<diag::Finding>> findings_;
};

}  // namespace

std::unique_ptr<RankAnalysis> MakeStepsAnalysis() { return std::make_unique<StepsAnalysis>(); }

}  // namespace gpuwatch::collector
