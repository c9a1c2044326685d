// Copies of the documents the tests read, for the schema check (see schema_check.h).
#include "schema_check.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "subprocess.h"

namespace gpuwatch::e2e {

std::string SchemaCheckDir() { return std::string(GPUWATCH_E2E_WORK) + "/schema-check"; }

nlohmann::json ParseKept(const std::string& text, const std::string& origin) {
  nlohmann::json doc = nlohmann::json::parse(text);
  // WORK/diff-noise/a/summary.json -> diff-noise_a_summary.json.PID-N.json: unique within a
  // ctest run (each test is its own process), and it says which test wrote it.
  std::string name = origin.rfind(GPUWATCH_E2E_WORK, 0) == 0 ? origin.substr(sizeof(GPUWATCH_E2E_WORK)) : origin;
  for (char& c : name)
    if (c == '/') c = '_';
  static std::atomic<int> counter{0};
  std::filesystem::create_directories(SchemaCheckDir());
  std::ofstream(SchemaCheckDir() + "/" + name + "." + std::to_string(getpid()) + "-" + std::to_string(counter++) +
                ".json")
      << text;
  return doc;
}

nlohmann::json ReadSummary(const std::string& path) { return ParseKept(ReadFile(path), path); }

}  // namespace gpuwatch::e2e
