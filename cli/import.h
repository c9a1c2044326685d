// `gpuwatch import TRACE... -o DIR`: diagnoses torch.profiler (Kineto) traces. Each file is
// one rank; its events go through the collector's own interpretation and analyses as a
// live rank's would (collector/import/), and DIR gets what a run writes.
#pragma once
#include <string>
#include <vector>

#include "console.h"

namespace CLI {
class App;
}

namespace gpuwatch::cli {

struct ImportArgs {
  std::vector<std::string> traces;
  std::string out;
  std::string job = "import";
  DetailFlags print;  // -q, -v: what is printed (console.h)
};

CLI::App* AddImportCommand(CLI::App& app, ImportArgs& args);
// Exit code: 0 written; 2 a trace could not be imported (one line says why); 1 imported
// but the summary could not be written.
int RunImport(const ImportArgs& args);
inline constexpr int kImportBadInput = 2;

}  // namespace gpuwatch::cli
