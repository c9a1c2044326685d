// See diff_gate.h. One row per metric: what limits it takes and how it reads the diff.
#include "compare/diff_gate.h"

#include <cmath>
#include <cstdlib>
#include <limits>

#include "common/format.h"

namespace gpuwatch::collector::compare {
namespace {

int SeverityRank(const std::string& s) {
  if (s == "high") return 3;
  if (s == "medium") return 2;
  if (s == "low" || s == "any") return 1;
  return 0;
}

const FindingDelta* FindFinding(const SummaryDiff& d, const std::string& id) {
  for (const FindingDelta& f : d.findings)
    if (f.id == id) return &f;
  return nullptr;
}

struct Reading {
  Figure figure;       // in the rule's unit (ms per step, or percent for gpu_busy/share)
  std::string what;    // "step time median"
  std::string unit;    // "ms", "ms/step", "%"
  bool exists = true;  // false: the runs do not have this figure
};

struct MetricRow {
  const char* name;
  bool takes_arg;
  bool time_ok;       // limits in ms
  bool percent_abs;   // an unsigned % limit means something (a share, GPU busy)
  bool percent_rel;   // a signed % limit is relative to BASE (else percentage points)
  Reading (*read)(const SummaryDiff& d, const GateRule& r);
  const char* help;
};

const MetricRow kMetrics[] = {
    {"step_time", false, true, false, true,
     [](const SummaryDiff& d, const GateRule&) {
       return Reading{d.step_median_ms, "step time median", "ms", d.comparable};
     },
     "step_time>+5%  step_time>+2ms  step_time>40ms   median step time"},
    {"step_p90", false, true, false, true,
     [](const SummaryDiff& d, const GateRule&) {
       return Reading{d.step_p90_ms, "step time p90", "ms", d.comparable};
     },
     "step_p90>+10%  step_p90>50ms                     p90 step time (median rank)"},
    {"gpu_busy", false, false, true, false,
     [](const SummaryDiff& d, const GateRule&) {
       return Reading{d.gpu_busy_pct, "GPU busy", "%", d.gpu_comparable};
     },
     "gpu_busy<-5%   gpu_busy<80%                      GPU busy, % (change in points)"},
    {"finding", true, true, true, true,
     [](const SummaryDiff& d, const GateRule& r) {
       const FindingDelta* f = FindFinding(d, r.arg);
       Reading out;
       out.what = r.arg;
       if (r.percent && !r.change) {  // its share of the time, as summary.json has it
         out.unit = "% of the time";
         out.figure = {0.0, 0.0};
         if (f) out.figure = {f->share.before.value_or(0) * 100, f->share.after.value_or(0) * 100};
         return out;
       }
       out.unit = "ms/step";
       out.exists = d.comparable;
       out.figure = {0.0, 0.0};
       if (f && d.comparable) out.figure = f->ms_per_step;
       return out;
     },
     "finding:sync_stall>1ms/step  finding:ID>+2ms/step  finding:ID>+50%  finding:ID>10%\n"
     "                 a finding's time per step (absent: 0), its change, or its share"},
    {"new-finding", true, false, false, false, nullptr,
     "new-finding:high  new-finding:medium  new-finding:low   a finding BASE did not have,\n"
     "                 of at least that severity"},
};

const MetricRow* FindMetric(const std::string& name) {
  for (const MetricRow& m : kMetrics)
    if (name == m.name) return &m;
  return nullptr;
}

std::string Num(double v) {
  if (std::isinf(v)) return v > 0 ? "+inf" : "-inf";
  return Printf("%.2f", v);
}

std::string LimitText(const GateRule& r) {
  std::string t = r.change ? Printf("%+g", r.limit) : Printf("%g", r.limit);
  return t + (r.percent ? "%" : " ms");
}

}  // namespace

bool ParseRule(const std::string& text, GateRule* rule, std::string* error) {
  *rule = GateRule{};
  rule->text = text;
  auto fail = [&](const std::string& why) {
    *error = "--fail-if '" + text + "': " + why + " (see gpuwatch diff --help)";
    return false;
  };
  if (text.rfind("new-finding:", 0) == 0) {
    rule->metric = "new-finding";
    rule->arg = text.substr(12);
    if (SeverityRank(rule->arg) == 0) return fail("expected new-finding:high, medium, low or any");
    return true;
  }
  const size_t op = text.find_first_of("<>");
  if (op == std::string::npos) return fail("no comparison: expected METRIC>LIMIT or METRIC<LIMIT");
  rule->op = text[op];
  std::string metric = text.substr(0, op);
  if (const size_t colon = metric.find(':'); colon != std::string::npos) {
    rule->arg = metric.substr(colon + 1);
    metric = metric.substr(0, colon);
  }
  const MetricRow* row = FindMetric(metric);
  if (!row || !row->read)
    return fail("unknown figure '" + metric + "': expected step_time, step_p90, gpu_busy, finding:ID or new-finding:SEVERITY");
  rule->metric = metric;
  if (row->takes_arg && rule->arg.empty()) return fail("expected " + metric + ":ID");
  if (!row->takes_arg && !rule->arg.empty()) return fail(metric + " takes no ':'");

  std::string limit = text.substr(op + 1);
  if (limit.empty()) return fail("no limit after '" + std::string(1, rule->op) + "'");
  rule->change = limit[0] == '+' || limit[0] == '-';
  const char* begin = limit.c_str();
  char* end = nullptr;
  const double v = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(v)) return fail("expected a number after '" + std::string(1, rule->op) + "'");
  std::string unit = end;
  if (unit.size() > 5 && unit.compare(unit.size() - 5, 5, "/step") == 0) unit.resize(unit.size() - 5);
  if (unit == "%") {
    rule->percent = true;
    rule->limit = v;
    if (!rule->change && !row->percent_abs)
      return fail("a % limit on " + metric + " is a change: write it with its sign (" + metric +
                  std::string(1, rule->op) + "+" + Printf("%g", v) + "%)");
  } else if (unit == "ms" || unit == "us" || unit == "s") {
    if (!row->time_ok) return fail(metric + " takes a % limit (e.g. gpu_busy<-5%)");
    rule->limit = unit == "ms" ? v : unit == "us" ? v / 1e3 : v * 1e3;
  } else {
    return fail("unknown unit '" + unit + "': expected %, ms, us or s (optionally /step)");
  }
  return true;
}

std::vector<RuleResult> CheckRules(const SummaryDiff& d, const std::vector<GateRule>& rules) {
  std::vector<RuleResult> out;
  for (const GateRule& r : rules) {
    RuleResult res;
    res.rule = r.text;
    if (r.metric == "new-finding") {
      std::string hits;
      for (const FindingDelta& f : d.findings)
        if (f.trend == Trend::kNew && SeverityRank(f.severity_after) >= SeverityRank(r.arg)) {
          res.tripped = true;
          hits += (hits.empty() ? "" : ", ") + f.id + " [" + f.severity_after + "]";
          if (f.ms_per_step.after) hits += " " + Num(*f.ms_per_step.after) + " ms/step";
          else hits += Printf(" %.0f%% of the time", f.share.after.value_or(0) * 100);
        }
      res.message = r.text + (res.tripped ? ": tripped: new finding(s) " + hits
                                          : ": ok: no new finding of severity " + r.arg + " or higher");
      out.push_back(res);
      continue;
    }
    const MetricRow* row = FindMetric(r.metric);
    const Reading reading = row->read(d, r);
    if (!reading.exists || (r.change && !reading.figure.before) || !reading.figure.after) {
      res.checked = false;
      res.tripped = true;
      std::string why = !d.comparable ? "the runs are not comparable" : "the figure is missing";
      if (r.metric == "gpu_busy" && !d.gpu_comparable) why = "a run has no device timeline";
      res.message = r.text + ": tripped: cannot be checked, " + why;
      out.push_back(res);
      continue;
    }
    const double before = reading.figure.before.value_or(0), after = *reading.figure.after;
    double value = after;
    std::string shown;
    if (r.change && r.percent && row->percent_rel) {
      value = before > 0 ? (after - before) / before * 100
                         : (after > 0 ? std::numeric_limits<double>::infinity() : 0.0);
      shown = (std::isinf(value) ? std::string("+inf") : Printf("%+.1f", value)) + "%";
    } else if (r.change) {
      value = after - before;
      shown = Printf("%+.2f", value) + (r.percent ? " points" : " " + reading.unit);
    } else {
      shown = Num(after) + " " + reading.unit;
    }
    res.tripped = r.op == '>' ? value > r.limit : value < r.limit;
    res.message = r.text + (res.tripped ? ": tripped: " : ": ok: ") + reading.what + " " +
                  Num(before) + " -> " + Num(after) + " " + reading.unit + ", " + shown +
                  " (limit " + std::string(1, r.op) + LimitText(r) + ")";
    out.push_back(res);
  }
  return out;
}

std::string RuleHelp() {
  std::string h;
  for (const MetricRow& m : kMetrics) h += "  " + std::string(m.help) + "\n";
  return h;
}

}  // namespace gpuwatch::collector::compare
