// What `gpuwatch run`, `gpuwatch report` and `gpuwatch import` print on stdout when a job's
// summary is ready, one way for all three: by default the short form
// (report/console_text.h), with -v summary.txt whole (every rank), with -q nothing; then,
// whatever the flags, the files line: where summary.txt, report.html and the trace are.
#pragma once
#include <string>

namespace CLI {
class App;
}

namespace gpuwatch::collector {
struct RenderedSummary;
}

namespace gpuwatch::cli {

enum class Detail { kQuiet, kShort, kFull };

struct DetailFlags {
  bool quiet = false;
  bool verbose = false;
  Detail detail() const { return quiet ? Detail::kQuiet : verbose ? Detail::kFull : Detail::kShort; }
};

// -q,--quiet and -v,--verbose (either one), described alike on every command.
void AddDetailFlags(CLI::App& cmd, DetailFlags& flags);

// Prints the summary at `detail`. `written`: it was saved; when not, summary.txt is
// printed whole whatever `detail` says (it is then the only copy).
void PrintSummary(const collector::RenderedSummary& summary, Detail detail, bool written);
// Prints the files line (report/console_text.h: FilesLine), the last thing a command prints.
// `trace`: the trace's path, "" when none.
void PrintFiles(const std::string& dir, bool written, const std::string& trace);

}  // namespace gpuwatch::cli
