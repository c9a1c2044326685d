// gpuwatch: the user-facing command. One subcommand per file in cli/; `run` and
// `collector` come next (issue 9). Everything it computes comes from the collector's core
// library, so `gpuwatch report` and a live collector cannot disagree.
#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "report.h"

int main(int argc, char** argv) {
  auto logger = spdlog::stderr_logger_st("gpuwatch");
  logger->set_pattern("[gpuwatch] %^%l%$: %v");
  spdlog::set_default_logger(logger);

  CLI::App app{"gpuwatch: where the time of a GPU job goes (CUDA syncs, copies, NCCL, kernels)",
               "gpuwatch"};
  app.require_subcommand(1);
  app.footer("Run 'gpuwatch COMMAND --help' for the options of a command.");
  gpuwatch::cli::ReportArgs report;
  CLI::App* report_cmd = gpuwatch::cli::AddReportCommand(app, report);
  CLI11_PARSE(app, argc, argv);
  if (report_cmd->parsed()) return gpuwatch::cli::RunReport(report);
  return 1;
}
