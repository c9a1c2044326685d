#include "diff.h"

#include <cstdio>
#include <fstream>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "compare/diff_gate.h"
#include "compare/diff_views.h"
#include "compare/run_figures.h"
#include "compare/summary_diff.h"

namespace gpuwatch::cli {

using namespace gpuwatch::collector::compare;

namespace {

bool ParseRules(const std::vector<std::string>& texts, std::vector<GateRule>* rules,
                std::string* error) {
  for (const std::string& t : texts) {
    GateRule r;
    if (!ParseRule(t, &r, error)) return false;
    rules->push_back(r);
  }
  return true;
}

// Prints each tripped rule on stderr (also under --json, where stdout is the document).
int Verdict(const std::vector<RuleResult>& results) {
  int code = 0;
  for (const RuleResult& r : results)
    if (r.tripped) {
      spdlog::error("--fail-if {}", r.message);
      code = kDiffTripped;
    }
  return code;
}

}  // namespace

CLI::App* AddDiffCommand(CLI::App& app, DiffArgs& args) {
  CLI::App* cmd = app.add_subcommand("diff", "Compare two runs: what changed, why, and a gate for CI");
  cmd->footer(
      "BASE and NEW are output folders of gpuwatch (holding summary.json) or summary.json\n"
      "files. The first line names the step time before and after and the biggest change\n"
      "by cause, with its time per step; then the findings, where the step goes, the sync,\n"
      "copy, collective and kernel tables, call sites of sync stalls and the environment,\n"
      "each ranked by its change per step. Figures are per step and per rank (the median\n"
      "rank), so runs of different lengths and world sizes compare; runs whose steps were\n"
      "found differently, or not at all, are said to be not comparable.\n\n"
      "Rules (--fail-if, repeatable; a signed limit is a change NEW - BASE, an unsigned one\n"
      "NEW's own value; units %, ms, us, s, optionally /step):\n" +
      RuleHelp() +
      "A rule that cannot be checked (runs not comparable, no GPU timeline) trips.\n\n"
      "Examples:\n"
      "  gpuwatch diff runs/monday runs/today\n"
      "  gpuwatch diff base/summary.json new/summary.json --json > diff.json\n"
      "  gpuwatch diff base new --html diff.html --fail-if 'step_time>+5%' \\\n"
      "      --fail-if 'finding:sync_stall>1ms/step' --fail-if new-finding:high\n"
      "(quote rules: > and < are redirections to the shell)\n\n"
      "Exit status: 0 within every rule, 3 a rule tripped, 2 usage error or a summary that\n"
      "cannot be read (a folder without summary.json, another schema, a truncated file).\n"
      "Details and the JSON document: docs/diff.md.");
  cmd->add_option("BASE", args.base, "The run to compare against (folder or summary.json)")->required();
  cmd->add_option("NEW", args.now, "The run to compare (folder or summary.json)")->required();
  cmd->add_flag("--json", args.json, "Print JSON (gpuwatch.diff.v1), not text");
  cmd->add_option("--html", args.html, "Also write the diff as a page to FILE");
  cmd->add_option("--fail-if", args.fail_if, "Exit 3 if RULE trips (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--noise", args.noise_pct,
                  "Noise floor, % of BASE's median step (3)")
      ->check(CLI::NonNegativeNumber);
  return cmd;
}

int RunDiff(const DiffArgs& args) {
  std::vector<GateRule> rules;
  std::string error;
  if (!ParseRules(args.fail_if, &rules, &error)) {
    spdlog::error("{}", error);
    return kDiffBadInput;
  }
  nlohmann::json base, now;
  if (!LoadSummary(args.base, &base, &error) || !LoadSummary(args.now, &now, &error)) {
    spdlog::error("{}", error);
    return kDiffBadInput;
  }
  DiffOptions options;
  options.noise_pct = args.noise_pct;
  const SummaryDiff diff =
      CompareRuns(ExtractFigures(base, args.base), ExtractFigures(now, args.now), options);
  const std::vector<RuleResult> results = CheckRules(diff, rules);
  if (!args.html.empty()) {
    std::ofstream page(args.html, std::ios::binary | std::ios::trunc);
    page << DiffHtml(diff, results);
    page.close();
    if (!page) {
      spdlog::error("{}: cannot write the page", args.html);
      return kDiffBadInput;
    }
  }
  const std::string text = args.json ? DiffJson(diff, results).dump(1) + "\n" : DiffText(diff, results);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  return Verdict(results);
}

bool CheckBaseline(const std::string& baseline, const std::vector<std::string>& rules,
                   std::string* error) {
  std::vector<GateRule> parsed;
  if (!ParseRules(rules, &parsed, error)) return false;
  if (baseline.empty()) {
    if (!rules.empty()) *error = "--fail-if needs --baseline DIR (the run to compare with)";
    return rules.empty();
  }
  nlohmann::json doc;
  if (!LoadSummary(baseline, &doc, error)) {
    *error = "--baseline " + *error;
    return false;
  }
  return true;
}

int DiffAfterRun(const std::string& baseline, const std::string& out,
                 const std::vector<std::string>& rules) {
  std::vector<GateRule> parsed;
  std::string error;
  ParseRules(rules, &parsed, &error);  // checked before the job (CheckBaseline)
  nlohmann::json base, now;
  if (!LoadSummary(baseline, &base, &error) || !LoadSummary(out, &now, &error)) {
    spdlog::error("cannot compare with the baseline: {}", error);
    return parsed.empty() ? 0 : kDiffTripped;
  }
  const SummaryDiff diff = CompareRuns(ExtractFigures(base, baseline), ExtractFigures(now, out));
  const std::vector<RuleResult> results = CheckRules(diff, parsed);
  const std::string text = "\n" + DiffText(diff, results);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  return Verdict(results);
}

}  // namespace gpuwatch::cli
