// `gpuwatch report DIR`: rebuilds summary.json and summary.txt of a finished (or crashed)
// run from the journals and spools in DIR/.gpuwatch.
#pragma once
#include <string>

#include "console.h"

namespace CLI {
class App;
}

namespace gpuwatch::cli {

struct ReportArgs {
  std::string dir;
  std::string out;        // where to write; default DIR
  std::string job;        // which job, when DIR holds several
  double hang_s = 300;
  DetailFlags print;      // -q, -v: what is printed (console.h)
  std::string ranks;      // --ranks: merge these ranks' traces instead (report_ranks.h)
};

// Adds the subcommand to `app`; `args` is filled when it is chosen.
CLI::App* AddReportCommand(CLI::App& app, ReportArgs& args);
// Exit code: 0 written, 1 nothing to rebuild or bad input, 2 rebuilt but not writable.
int RunReport(const ReportArgs& args);

}  // namespace gpuwatch::cli
