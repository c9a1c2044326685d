// summary.txt: a header for the job, one block per rank (each analysis prints its own
// table), then a job line made of each analysis' headline. Everything fits 80 columns;
// strings from ranks are clipped and stripped of control characters.
#include "report/format.h"
#include "report/summary.h"

namespace gpuwatch::collector {
namespace {

void AppendWrapped(std::string& out, const std::string& first, const std::vector<std::string>& parts) {
  std::string line = first;
  bool first_part = true;
  for (const auto& p : parts) {
    if (p.empty()) continue;
    const std::string sep = first_part ? "" : ", ";
    if (!first_part && line.size() + sep.size() + p.size() + 1 > kTextWidth) {
      out += line + ",\n";
      line = "  " + p;
    } else {
      line += sep + p;
    }
    first_part = false;
  }
  out += line + "\n";
}

}  // namespace

std::string BuildSummaryText(const Job& job) {
  const std::string rule_heavy(kTextWidth, '=');
  std::string out;
  out += Clip("gpuwatch summary: job " + job.id(), kTextWidth) + "\n";
  out += Printf("%zu rank%s of %d, %d host%s, wall %s\n", job.ranks().size(),
                job.ranks().size() == 1 ? "" : "s", job.world_size(), job.distinct_hosts(),
                job.distinct_hosts() == 1 ? "" : "s", FmtDuration(job.wall_s()).c_str());

  int abnormal = 0;
  for (const auto& [key, rank] : job.ranks()) {
    const wire::Hello& h = rank->hello();
    out += rule_heavy + "\n";
    out += Clip(Printf("rank %d of %d  local %d  host %s  pid %d  device %d  (%s)", h.rank(),
                       h.world_size(), h.local_rank(), Clip(h.host(), 24).c_str(), h.pid(),
                       h.device(), Clip(h.rank_source(), 8).c_str()),
                kTextWidth) +
           "\n";
    out += Printf("  ended %s, wall %s, %llu events\n",
                  rank->ended_normally() ? "normally" : "abnormally",
                  FmtDuration(rank->wall_s()).c_str(),
                  static_cast<unsigned long long>(rank->events()));
    for (const auto& a : rank->analyses()) a->WriteText(out);
    abnormal += !rank->ended_normally();
  }
  out += rule_heavy + "\n";

  std::vector<std::string> parts;
  parts.push_back(Printf("%zu rank%s (%d abnormal)", job.ranks().size(),
                         job.ranks().size() == 1 ? "" : "s", abnormal));
  for (const auto& a : job.Totals()) parts.push_back(a->Headline());
  AppendWrapped(out, "job: ", parts);
  return out;
}

}  // namespace gpuwatch::collector
