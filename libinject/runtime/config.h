// GPUWATCH_* settings, read once when recording starts. Each is documented in the README.
#pragma once
#include <cstddef>
#include <string>

#include "enrich/cupti_budget.h"
#include "enrich/host_sampler.h"

namespace gpuwatch::inject {

struct Config {
  bool disabled = false;         // GPUWATCH_DISABLE=1: hooks forward and record nothing
  bool autostart = true;         // GPUWATCH_AUTOSTART=0: never spawn a collector
  // GPUWATCH_LAUNCH_RECORDS=all: every kernel launch a record, windows or not; by default
  // those outside CUPTI's windows are summarized where they are made (record/launch_summary.h).
  bool summarize_launches = true;
  size_t ring_records = 16384;   // GPUWATCH_RING_RECORDS: per-thread ring (rounded to 2^k)
  int flush_ms = 10;             // GPUWATCH_FLUSH_MS: how often the sender drains the rings
  double call_site_ms = 1.0;     // GPUWATCH_CALLSITE_US (µs, default 1000): syncs blocking this long record where from (0: never)
  double sample_hz = 100;        // GPUWATCH_SAMPLE_HZ: Python stacks of CUDA-calling threads per second (0: off)
  // GPUWATCH_NATIVE_FRAMES=on (default) | proc | off: native frames of threads without
  // Python (enrich/host_sampler.h); `proc` never signals the job's threads.
  NativeFrames native_frames = NativeFrames::kAuto;
  int exit_timeout_ms = 3000;    // GPUWATCH_EXIT_TIMEOUT_MS: most time spent at exit
  int nvml_ms = 1000;            // GPUWATCH_NVML_MS: the rank's device through NVML this often (100..10000; 0: never)
  size_t max_buffer_bytes = 8u << 20;  // GPUWATCH_BUFFER_BYTES: encoded data held while
                                       // the collector is unreachable
  size_t spool_max_bytes = 256u << 20;  // GPUWATCH_SPOOL_BYTES: the spool file's cap
  // The overhead budget (enrich/cupti_budget.h): GPUWATCH_OVERHEAD ("1%" or "0.01"), and
  // GPUWATCH_CUPTI=budget (default: CUPTI in windows within the budget) | full | off.
  double overhead = 0.01;
  CuptiBudget::Mode cupti_mode = CuptiBudget::Mode::kBudget;
  // GPUWATCH_OVERHEAD_CONTENDED=0: the budget spends its work's own time even where the
  // job's cores are all busy (by default, what that work costs the job's wall time there).
  bool overhead_contended = true;
  // GPUWATCH_TRACE_WINDOW=FROM:TO (seconds after start): CUPTI records all of it whatever
  // the budget, so the trace's full detail there has the device timeline. to <= from: none.
  double record_from_s = 0, record_to_s = 0;
};

// Parsed on first use (the first recorded call pays for it: only getenv here); a bad value
// logs one line and keeps the default.
const Config& GetConfig();

// Paths, resolved by the sender thread (they cost syscalls): GPUWATCH_OUT, else
// $PWD/gpuwatch-out, made absolute; GPUWATCH_COLLECTOR_BIN, else
// <this library's dir>/../bin/gpuwatch-collector.
std::string OutDir();
std::string CollectorBin();

}  // namespace gpuwatch::inject
