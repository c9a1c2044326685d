// Batch.settled_ns is a promise the library makes (proto/gpuwatch.proto): no event it sends
// later has an order key (its end for host syncs and NVTX ranges, its start otherwise)
// before it. The collector puts host events in order up to it at once instead of holding
// them for half a second, so a broken promise would misorder the step analysis silently.
// Checked on the journals of real runs: comm_bound (the library holds each all-reduce back
// until its GPU time is known) and straggler (three ranks of different speeds).
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "ingest/journal_store.h"
#include "scenario_run.h"

namespace fs = std::filesystem;
namespace wire = gpuwatch::wire;
using namespace gpuwatch::e2e;

namespace {

bool KeyedAtEnd(wire::Api a) {
  return a == wire::NVTX_RANGE || a == wire::CUDA_STREAM_SYNCHRONIZE || a == wire::CUDA_DEVICE_SYNCHRONIZE ||
         a == wire::CUDA_EVENT_SYNCHRONIZE;
}

void CheckScenario(const std::string& name) {
  INFO("scenario " << name);
  const JobRun run = RunScenario("settled-" + name, name);
  INFO("driver stderr:\n" << run.job.err);
  int journals = 0;
  for (const auto& f : fs::directory_iterator(run.out + "/.gpuwatch")) {
    if (f.path().filename().string().rfind("rank-", 0) != 0) continue;
    ++journals;
    uint64_t settled = 0, events = 0, batches_saying = 0, broken = 0, collectives = 0;
    std::string first_broken;
    gpuwatch::collector::FrameFileInfo info;
    const bool ok = gpuwatch::collector::ScanFrameFile(
        f.path().string(),
        [&](const wire::Frame& frame, std::string_view) {
          if (!frame.has_batch()) return;
          for (const auto& e : frame.batch().events()) {
            ++events;
            collectives += e.api() >= wire::NCCL_ALL_REDUCE && e.api() <= wire::NCCL_RECV;
            const uint64_t key = KeyedAtEnd(e.api()) ? e.t_ns() + e.dur_ns() : e.t_ns();
            if (key < settled && broken++ == 0)
              first_broken = wire::Api_Name(e.api()) + " keyed " + std::to_string(settled - key) + " ns before";
          }
          if (frame.batch().settled_ns() > 0) {
            ++batches_saying;
            settled = std::max(settled, frame.batch().settled_ns());
          }
        },
        &info);
    INFO(f.path().string() << ": " << info.error << "; first broken: " << first_broken);
    CHECK(ok);
    CHECK(events > 0);
    CHECK(collectives > 0);
    CHECK(batches_saying > 0);
    CHECK(broken == 0);
  }
  CHECK(journals > 1);
}

}  // namespace

TEST_CASE("settled: no event arrives after a batch that said its time was settled") {
  CheckScenario("comm_bound");
  CheckScenario("straggler");
}
