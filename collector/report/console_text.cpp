// See console_text.h.
#include "report/console_text.h"

#include <algorithm>

#include "common/format.h"
#include "common/thresholds.h"
#include "report/figures_text.h"
#include "report/standout_ranks.h"
#include "report/summary.h"

namespace gpuwatch::collector {
namespace {

size_t Lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

// "A" or "A-B", from two formatted figures; "1.2-1.5 ms" when they share their unit.
std::string Range(const std::string& lo, const std::string& hi) {
  if (lo == hi) return lo;
  const size_t a = lo.rfind(' '), b = hi.rfind(' ');
  if (a != std::string::npos && b != std::string::npos && lo.substr(a) == hi.substr(b)) return lo.substr(0, a) + "-" + hi;
  return lo + "-" + hi;
}

// The step and GPU busy figures of the ranks not in `skip`: "step 10.1-10.4 ms, GPU busy 58-61%".
std::string Spread(const JobView& job, const std::vector<bool>& skip) {
  double step_lo = 0, step_hi = 0, busy_lo = 2, busy_hi = -1;
  for (size_t i = 0; i < job.ranks.size(); ++i) {
    if (skip[i]) continue;
    const RankResult& r = *job.ranks[i].result;
    if (const double s = StepS(r); s > 0) {
      step_lo = step_lo > 0 ? std::min(step_lo, s) : s;
      step_hi = std::max(step_hi, s);
    }
    if (const double b = BusyShare(r); b >= 0) {
      busy_lo = std::min(busy_lo, b);
      busy_hi = std::max(busy_hi, b);
    }
  }
  std::string s = step_hi > 0 ? "step " + Range(FmtDuration(step_lo), FmtDuration(step_hi)) : "no steps found";
  s += busy_hi >= 0 ? ", GPU busy " + Range(Printf("%.0f", 100 * busy_lo), Printf("%.0f", 100 * busy_hi)) + "%"
                    : ", no GPU timeline";
  return s;
}

// The fewest lines StandOutLines takes: the header, kConsoleMinRanks ranks, the "more" line and
// the others' line (one line when no rank stands out).
size_t RanksLinesAtLeast(size_t standing, size_t n) {
  if (standing == 0) return 1;
  const size_t listed = std::min(standing, kConsoleMinRanks);
  return 1 + listed + (listed < standing ? 1 : 0) + (standing < n ? 1 : 0);
}

// One line per rank that stands out (at most `room` lines in all, kConsoleMinRanks ranks at
// least), then one for the others.
void StandOutLines(const JobView& job, const std::vector<StandOut>& standing, size_t room, std::string& out) {
  const size_t n = job.ranks.size();
  std::vector<bool> skip(n, false);
  for (const StandOut& s : standing) skip[s.index] = true;
  const std::string rest = Spread(job, skip);
  if (standing.empty()) {
    const std::string line = n == 1 ? Printf("rank %d: ", job.ranks[0].hello->rank()) + rest
                                    : Printf("ranks: none of the %zu stands out: ", n) + rest;
    out += Clip(line, kTextWidth) + "\n";
    return;
  }
  out += Printf("ranks that stand out: %zu of %zu (every rank: summary.txt, or -v)\n", standing.size(), n);
  const bool others = standing.size() < n;
  // Lines left for the ranks themselves: the header is out, the others' line and a
  // "more" line to come.
  const size_t fixed = 1 + (others ? 1 : 0) + 1;
  size_t shown = std::min(standing.size(), std::max(kConsoleMinRanks, room > fixed ? room - fixed : 0));
  if (shown + 1 >= standing.size()) shown = standing.size();  // "1 more" would take its line
  const bool hosts = job.distinct_hosts() > 1;
  for (size_t k = 0; k < shown; ++k) {
    const StandOut& s = standing[k];
    const RankView& v = job.ranks[s.index];
    std::string line = Printf("  rank %d", v.hello->rank());
    if (hosts) line += " (" + Clip(v.hello->host(), 24) + ")";
    line += ":";
    for (size_t w = 0; w < s.why.size(); ++w) line += (w ? ", " : " ") + s.why[w];
    // Its figures beside the reasons, where they are not a reason themselves.
    if (const double step = StepS(*v.result); !s.by_step && step > 0) line += "; step " + FmtDuration(step);
    if (const double busy = BusyShare(*v.result); !s.by_busy && busy >= 0)
      line += Printf("%s GPU busy %.0f%%", s.by_step ? ";" : ",", 100 * busy);
    out += Clip(line, kTextWidth) + "\n";
  }
  if (shown < standing.size())
    out += Printf("  and %zu more (summary.txt)\n", standing.size() - shown);
  if (others)
    out += Clip(Printf("  the other %zu rank%s: ", n - standing.size(), n - standing.size() == 1 ? "" : "s") + rest,
                kTextWidth) +
           "\n";
}

}  // namespace

std::string BuildConsoleText(const JobView& job) {
  const std::string head = Clip("gpuwatch summary: job " + job.id + ": " + RanksLine(job), kTextWidth) + "\n";
  const std::string job_line = JobLine(job);
  const std::vector<StandOut> standing = RanksThatStandOut(job);
  // Fewer findings when a long verdict and long fixes leave the ranks too little room.
  const size_t fixed = Lines(head) + Lines(job_line) + 1 + RanksLinesAtLeast(standing.size(), job.ranks.size());
  std::string findings;
  for (size_t k = kConsoleFindings + 1; k-- > 0;) {
    findings = FindingsText(*job.result, k, false);
    if (fixed + Lines(findings) <= kConsoleLines) break;
  }
  std::string out = head + findings;
  const size_t used = Lines(out) + Lines(job_line) + 1;  // + the files line
  StandOutLines(job, standing, kConsoleLines > used ? kConsoleLines - used : 0, out);
  return out + job_line;
}

std::string FilesLine(const std::string& dir, bool written, const std::string& trace) {
  std::string line = written ? "files: " + dir + "/summary.txt (every rank), " + dir + "/report.html"
                             : "files: the summary was not saved in " + dir + " (the error is above)";
  line += trace.empty() ? ", no trace" : ", " + trace;
  return line + "\n";
}

}  // namespace gpuwatch::collector
