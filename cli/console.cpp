// See console.h.
#include "console.h"

#include <cstdio>

#include <CLI/CLI.hpp>

#include "report/console_text.h"
#include "report/summary.h"

namespace gpuwatch::cli {

void AddDetailFlags(CLI::App& cmd, DetailFlags& flags) {
  CLI::Option* q = cmd.add_flag("-q,--quiet", flags.quiet,
                                "Print only where the files are (summary.txt, report.html, the trace)");
  CLI::Option* v = cmd.add_flag("-v,--verbose", flags.verbose,
                                "Print summary.txt whole: every rank's tables (default: the verdict, the top "
                                "findings and the ranks that stand out)");
  q->excludes(v);
}

namespace {
void Print(const std::string& s) {
  std::fwrite(s.data(), 1, s.size(), stdout);
  std::fflush(stdout);
}
}  // namespace

void PrintSummary(const collector::RenderedSummary& summary, Detail detail, bool written) {
  if (!written || detail == Detail::kFull)
    Print(summary.text);
  else if (detail == Detail::kShort)
    Print(summary.console);
}

void PrintFiles(const std::string& dir, bool written, const std::string& trace) {
  Print(collector::FilesLine(dir, written, trace));
}

}  // namespace gpuwatch::cli
