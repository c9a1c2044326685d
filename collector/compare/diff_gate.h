// The gate of `gpuwatch diff --fail-if RULE`: a rule names a figure of the SummaryDiff and
// a limit; a rule trips when the figure is past the limit, or when it cannot be checked
// (a gate that cannot confirm a run is fine fails it). Grammar and table: docs/diff.md.
#pragma once
#include <string>
#include <vector>

#include "compare/summary_diff.h"

namespace gpuwatch::collector::compare {

struct GateRule {
  std::string text;      // as the user wrote it
  std::string metric;    // a name of the metric table: step_time, step_p90, gpu_busy, finding, new-finding
  std::string arg;       // finding:ID -> ID; new-finding:SEV -> SEV
  char op = '>';         // '>' or '<'
  bool change = false;   // signed limit (+5%, -2ms): NEW - BASE; else NEW's own value
  bool percent = false;  // limit in %; else in ms (per step)
  double limit = 0;      // ms or %, with its sign
};

struct RuleResult {
  std::string rule;
  bool checked = true;   // false: the figure does not exist (runs not comparable); tripped too
  bool tripped = false;
  std::string message;   // "RULE: tripped|ok: the figures"
};

// Parses one --fail-if value; on failure sets `error` to one line saying what is wrong.
bool ParseRule(const std::string& text, GateRule* rule, std::string* error);

std::vector<RuleResult> CheckRules(const SummaryDiff& diff, const std::vector<GateRule>& rules);

// The grammar, for --help.
std::string RuleHelp();

}  // namespace gpuwatch::collector::compare
