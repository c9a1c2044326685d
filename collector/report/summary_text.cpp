// summary.txt: the verdict and the findings, a header for the job, one block per rank (the
// tables of report/figures_text.h), the hangs, then a job line of headlines. Everything fits 80 columns;
// strings from ranks are clipped and stripped of control characters.
#include "common/format.h"
#include "report/comms_text.h"
#include "report/critical_path_text.h"
#include "report/figures_text.h"
#include "report/host_clocks.h"
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

std::string BuildSummaryText(const JobView& job) {
  const std::string rule_heavy(kTextWidth, '=');
  std::string out;
  out += Clip("gpuwatch summary: job " + job.id, kTextWidth) + "\n";
  // The diagnosis first: the verdict, then the findings ranked by time lost.
  out += FindingsText(*job.result);
  std::string who = "median rank";
  if (!job.result->critical_path_ranks.empty()) {  // the ranks' graphs joined at their collectives
    who = "ranks joined, through rank";
    for (size_t k = 0; k < job.result->critical_path_ranks.size() && k < 4; ++k)
      who += (k ? ", " : " ") + std::to_string(job.result->critical_path_ranks[k].first);
  }
  CriticalPathText(job.result->critical_path, job.result->all_fixed, who, out);
  out += RanksLine(job) + "\n";
  AppendCommsText(*job.result, out);
  // Multi-host through --upstream: how each host's times were put on this clock.
  if (const auto hosts = HostClocks(job); AnyForwarded(hosts)) {
    for (const HostClock& h : hosts) {
      const std::string host = Clip(h.host, 24);
      if (h.via_collector.empty())
        out += Printf("host %s: clock +0 (its ranks connected directly)\n", host.c_str());
      else
        out += Clip(Printf("host %s: clock %+.3f ms +/- %s via collector on %s", host.c_str(),
                           h.offset_ns / 1e6, FmtDuration(h.uncertainty_ns * 1e-9).c_str(),
                           Clip(h.via_collector, 24).c_str()),
                    kTextWidth) +
               "\n";
    }
  }

  for (const RankView& rank : job.ranks) {
    const wire::Hello& h = *rank.hello;
    out += rule_heavy + "\n";
    out += Clip(Printf("rank %d of %d  local %d  host %s  pid %d  device %d  (%s)", h.rank(),
                       h.world_size(), h.local_rank(), Clip(h.host(), 24).c_str(), h.pid(),
                       h.device(), Clip(h.rank_source(), 8).c_str()),
                kTextWidth) +
           "\n";
    out += Printf("  ended %s, wall %s, %llu events\n", rank.ended_normally ? "normally" : "abnormally",
                  FmtDuration(rank.result->WallS()).c_str(),
                  static_cast<unsigned long long>(rank.result->host_calls));
    const RankStorage& st = *rank.storage;
    if (st.journal.capped)
      out += Clip("  journal stopped at its cap of " + FmtBytes(st.journal.bytes) +
                      ": later frames were counted but not kept on disk",
                  kTextWidth) + "\n";
    if (!st.journal.error.empty())
      out += Clip("  journal: " + st.journal.error, kTextWidth) + "\n";
    if (!st.journal.checkpoint_error.empty())
      out += Clip("  journal checkpoints stopped: " + st.journal.checkpoint_error, kTextWidth) + "\n";
    if (st.spool_capped) out += "  the rank's spool reached its cap: later records are missing\n";
    if (st.truncated_tail_bytes > 0)
      out += Printf("  rebuilt: an incomplete last frame (%llu bytes) was ignored\n",
                    static_cast<unsigned long long>(st.truncated_tail_bytes));
    AppendRankText(*rank.result, out, job.result);
  }
  out += rule_heavy + "\n";
  if (!job.hangs->empty()) {
    out += Printf("%zu hang%s (a rank inside a collective or sync too long):\n",
                  job.hangs->size(), job.hangs->size() == 1 ? "" : "s");
    for (const Hang& h : *job.hangs) {
      std::string line = Printf("  rank %d in %s", h.rank, h.api.c_str());
      if (h.collective) line += Printf(" seq %llu", static_cast<unsigned long long>(h.seq));
      line += Printf(" for %s;", FmtDuration(h.inside_s).c_str());
      for (const auto& s : h.ranks) {
        std::string part = Printf(" r%d:", s.rank);
        if (h.collective)
          part += s.has_last_seq ? Printf("done %llu", static_cast<unsigned long long>(s.last_seq))
                                 : std::string("done -");
        if (!s.inside.empty()) {
          if (h.collective) part += ",";
          part += "in " + s.inside;
        }
        if (line.size() + part.size() > kTextWidth) {
          out += line + "\n";
          line = "   ";
        }
        line += part;
      }
      out += line + "\n";
    }
  }

  out += JobLine(job);
  return out;
}

std::string RanksLine(const JobView& job) {
  return Printf("%zu rank%s of %d, %d host%s, wall %s", job.ranks.size(), job.ranks.size() == 1 ? "" : "s",
                job.world_size, job.distinct_hosts(), job.distinct_hosts() == 1 ? "" : "s",
                FmtDuration(job.wall_s()).c_str());
}

std::string JobLine(const JobView& job) {
  int abnormal = 0;
  for (const RankView& rank : job.ranks) abnormal += !rank.ended_normally;
  std::vector<std::string> parts;
  parts.push_back(Printf("%zu rank%s (%d abnormal)", job.ranks.size(), job.ranks.size() == 1 ? "" : "s", abnormal));
  for (std::string& p : JobHeadlines(*job.result)) parts.push_back(std::move(p));
  std::string out;
  AppendWrapped(out, "job: ", parts);
  return out;
}

}  // namespace gpuwatch::collector
