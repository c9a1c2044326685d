// libFuzzer target for the collector's stream decoder: arbitrary bytes go through
// FrameReader + Connection + interpretation and analyses exactly as the server feeds them (split into the
// read sizes the first input byte picks), then through hang detection and both summary
// renderers, and the connection is closed as the server would. Journaling is on, into a
// temp directory, so the journal writer sees hostile frames too.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>

#include <google/protobuf/stubs/logging.h>
#include <string>
#include <string_view>

#include "ingest/connection.h"
#include "jobs/job_end.h"
#include "jobs/job_table.h"

using namespace gpuwatch::collector;

namespace {

const JournalOptions& Journal() {
  static JournalOptions opt = [] {
    JournalOptions o;
    char tmpl[] = "/tmp/gw-fuzz-XXXXXX";
    o.enabled = mkdtemp(tmpl) != nullptr;
    o.out_override = tmpl;
    o.max_bytes = 1 << 20;
    // Invalid UTF-8 in a string field is a parse failure (the client is dropped); the
    // library logs it on every such input, which only slows fuzzing down.
    google::protobuf::SetLogHandler(nullptr);
    return o;
  }();
  return opt;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // First byte: chunk size, so frames split at every boundary get exercised.
  const size_t chunk = 1 + data[0] * 37;
  std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  JobTable jobs(JobTiming{std::chrono::milliseconds(0), std::chrono::milliseconds(0), 1.0});
  static gpuwatch::wire::FrameScratch scratch;  // as in the server: one for every connection
  {
    Connection conn(4242, jobs, Clock::now(), &Journal());
    while (!rest.empty()) {
      const auto part = rest.substr(0, chunk);
      rest.remove_prefix(part.size());
      if (!conn.OnBytes(part, scratch, Clock::now())) break;
    }
    jobs.CheckHangs(Clock::now());
    conn.Close(Clock::now());
  }
  for (Job* job : jobs.Unwritten()) {
    RenderedSummary s = SummarizeJob(*job);
    if (s.text.empty() || s.html.empty()) abort();
    jobs.MarkWritten(job);
  }
  // Each input starts with no journal: otherwise every iteration rescans the last one's.
  std::error_code ec;
  std::filesystem::remove_all(Journal().out_override + "/.gpuwatch", ec);
  return 0;
}
