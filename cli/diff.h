// `gpuwatch diff BASE NEW [--json] [--html FILE] [--fail-if RULE]...`: what changed between
// two runs (output folders or summary.json files), by cause, and a gate for CI. Also the
// end of `gpuwatch run --baseline DIR`. The comparison itself is collector/compare/.
#pragma once
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace gpuwatch::cli {

// Exit codes of gpuwatch diff: 0 within every rule.
inline constexpr int kDiffBadInput = 2;  // usage error, or a summary that cannot be read
inline constexpr int kDiffTripped = 3;   // a --fail-if rule tripped (or could not be checked)

struct DiffArgs {
  std::string base, now;
  bool json = false;               // JSON on stdout instead of the text
  std::string html;                // also write the page here
  std::vector<std::string> fail_if;
  double noise_pct = 3.0;          // compare::DiffOptions::noise_pct
};

CLI::App* AddDiffCommand(CLI::App& app, DiffArgs& args);
int RunDiff(const DiffArgs& args);

// `gpuwatch run --baseline DIR --fail-if RULE`: checked before the job starts, so a typo
// does not cost a run. One-line error on failure.
bool CheckBaseline(const std::string& baseline, const std::vector<std::string>& rules,
                   std::string* error);
// After the job: diffs `out` against the baseline and prints the text on stdout. Returns 0,
// or kDiffTripped when a rule tripped (or `out` has no summary and rules were given).
int DiffAfterRun(const std::string& baseline, const std::string& out,
                 const std::vector<std::string>& rules);

}  // namespace gpuwatch::cli
