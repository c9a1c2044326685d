// libFuzzer target for `gpuwatch import`'s reader: arbitrary bytes as a trace file (plain
// JSON or gzip: zlib tells them apart) through the whole import -- gzip stream, SAX reader,
// Kineto mapping, the sorter (a tiny in-memory cap, so runs spill to disk), the rank's frames
// into the job table -- then both summary renderers. Bad input must end in an error line,
// never a crash, a hang or a leak.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "import/rank_import.h"
#include "jobs/job_end.h"
#include "jobs/job_table.h"

using namespace gpuwatch::collector;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/gw-fuzz-kineto-" + std::to_string(getpid()) + ".json";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) abort();
  if (size && std::fwrite(data, 1, size, f) != size) abort();
  std::fclose(f);
  JobTable jobs(JobTiming{std::chrono::milliseconds(0), std::chrono::milliseconds(0), 1.0});
  RankImportOptions o;
  o.max_in_memory = 16;
  RankImportStats stats;
  std::string error;
  if (ImportRankTrace(path, o, jobs, &stats, &error)) {
    if (!error.empty()) abort();  // success says nothing went wrong
  } else if (error.empty() || error.find('\n') != std::string::npos) {
    abort();  // a refusal is one line
  }
  std::remove(path.c_str());
  for (Job* job : jobs.Unwritten()) {
    RenderedSummary s = SummarizeJob(*job);
    if (s.text.empty() || s.html.empty()) abort();
    jobs.MarkWritten(job);
  }
  return 0;
}
