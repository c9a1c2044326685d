// `gpuwatch run [-o DIR] [--trace LEVEL] [--metrics ADDR:PORT] [--overhead SHARE]
// [--cupti MODE] -- COMMAND ...`: a private
// collector on a thread of this process, COMMAND run with the library preloaded and
// pointed at it, the summary printed when COMMAND ends, COMMAND's exit code returned.
#pragma once
#include <string>
#include <vector>

#include "console.h"

namespace CLI {
class App;
}

namespace gpuwatch::cli {

struct RunArgs {
  std::string out = "gpuwatch-out";
  std::string trace;    // off, summary, full; default $GPUWATCH_TRACE, else full
  std::string trace_keep;  // first, last, last:N; default $GPUWATCH_TRACE_KEEP, else last
  std::string metrics;  // ADDR:PORT, empty: none
  std::string overhead;  // GPUWATCH_OVERHEAD for COMMAND; empty: as the environment has it
  std::string cupti;     // GPUWATCH_CUPTI for COMMAND (budget, full, off); empty: the same
  DetailFlags print;    // -q, -v: what is printed when COMMAND ends (console.h)
  std::string baseline;               // diff the run against this one at the end (diff.h)
  std::vector<std::string> fail_if;   // gate rules of that diff
  std::vector<std::string> command;
};

// Exit codes of gpuwatch itself (otherwise COMMAND's, or 128 + signal).
inline constexpr int kRunFailed = 125;  // gpuwatch could not start the collector or the job

CLI::App* AddRunCommand(CLI::App& app, RunArgs& args);
// `gpuwatch run ... -- COMMAND`: moves COMMAND into args.command and returns how many
// arguments are left for the parser (argc when there is no `--`).
int SplitRunCommand(int argc, char** argv, RunArgs& args);
// `command_app` is the subcommand AddRunCommand returned (its leftover arguments are
// COMMAND).
int RunCommand(RunArgs& args, CLI::App& command_app);

}  // namespace gpuwatch::cli
