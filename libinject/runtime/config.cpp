// GPUWATCH_* parsed, with the defaults config.h documents.
#include "runtime/config.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "overhead_settings.h"

namespace gpuwatch::inject {
namespace {

long EnvLong(const char* name, long dflt, long lo, long hi) {
  const char* v = std::getenv(name);
  if (!v || !*v) return dflt;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < lo || x > hi) {
    std::fprintf(stderr, "[gpuwatch] ignoring %s=%s: expected an integer in [%ld, %ld]\n", name, v, lo, hi);
    return dflt;
  }
  return x;
}

// GPUWATCH_OVERHEAD and GPUWATCH_CUPTI, read as `gpuwatch run` checks them (wire
// overhead_settings.h); a bad value is said once and the default kept.
double EnvShare(const char* name, double dflt) {
  const char* v = std::getenv(name);
  if (!v || !*v) return dflt;
  double x = dflt;
  std::string error;
  if (!wire::ParseOverheadShare(v, &x, &error)) {
    std::fprintf(stderr, "[gpuwatch] ignoring %s: %s\n", name, error.c_str());
    return dflt;
  }
  return x;
}

CuptiBudget::Mode EnvCuptiMode() {
  const char* v = std::getenv("GPUWATCH_CUPTI");
  CuptiBudget::Mode m = CuptiBudget::Mode::kBudget;
  std::string error;
  if (v && *v && !wire::ParseCuptiSetting(v, &m, &error)) {
    std::fprintf(stderr, "[gpuwatch] ignoring GPUWATCH_CUPTI: %s\n", error.c_str());
    return CuptiBudget::Mode::kBudget;
  }
  return m;
}

NativeFrames EnvNativeFrames() {
  const char* v = std::getenv("GPUWATCH_NATIVE_FRAMES");
  if (!v || !*v || std::string(v) == "auto") return NativeFrames::kAuto;
  if (std::string(v) == "on" || std::string(v) == "1") return NativeFrames::kSignal;
  if (std::string(v) == "proc") return NativeFrames::kProc;
  if (std::string(v) == "off" || std::string(v) == "0") return NativeFrames::kOff;
  std::fprintf(stderr, "[gpuwatch] ignoring GPUWATCH_NATIVE_FRAMES=%s: expected auto, on, proc or off\n", v);
  return NativeFrames::kAuto;
}

// "FROM:TO" in seconds, 0 <= FROM < TO (the collector's trace window, whose errors it
// reports: a bad value here only leaves the budget alone).
void EnvRecordWindow(double* from, double* to) {
  const char* v = std::getenv("GPUWATCH_TRACE_WINDOW");
  if (!v || !*v) return;
  char* end = nullptr;
  const double a = std::strtod(v, &end);
  if (end == v || *end != ':') return;
  const char* rest = end + 1;
  const double b = std::strtod(rest, &end);
  if (end == rest || *end != '\0' || !(a >= 0 && b > a)) return;
  *from = a;
  *to = b;
}

std::string LibraryDir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&GetConfig), &info) == 0 || !info.dli_fname) return "";
  std::string path = info.dli_fname;
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

Config Load() {
  Config c;
  c.disabled = EnvLong("GPUWATCH_DISABLE", 0, 0, 1) == 1;
  c.autostart = EnvLong("GPUWATCH_AUTOSTART", 1, 0, 1) == 1;
  if (const char* v = std::getenv("GPUWATCH_LAUNCH_RECORDS"); v && *v) {
    if (std::string(v) == "all")
      c.summarize_launches = false;
    else if (std::string(v) != "summary")
      std::fprintf(stderr, "[gpuwatch] ignoring GPUWATCH_LAUNCH_RECORDS=%s: expected summary or all\n", v);
  }
  long ring = EnvLong("GPUWATCH_RING_RECORDS", 16384, 64, 1 << 22);
  size_t pow2 = 64;
  while (pow2 < static_cast<size_t>(ring)) pow2 <<= 1;
  c.ring_records = pow2;
  c.flush_ms = static_cast<int>(EnvLong("GPUWATCH_FLUSH_MS", 10, 1, 10000));
  c.call_site_ms = static_cast<double>(EnvLong("GPUWATCH_CALLSITE_US", 1000, 0, 60'000'000)) / 1000.0;
  c.sample_hz = static_cast<double>(EnvLong("GPUWATCH_SAMPLE_HZ", 100, 0, 1000));
  c.native_frames = EnvNativeFrames();
  c.exit_timeout_ms = static_cast<int>(EnvLong("GPUWATCH_EXIT_TIMEOUT_MS", 3000, 0, 600000));
  c.nvml_ms = static_cast<int>(EnvLong("GPUWATCH_NVML_MS", 1000, 0, 10000));
  if (c.nvml_ms > 0 && c.nvml_ms < 100) c.nvml_ms = 100;  // at most 10 Hz
  c.max_buffer_bytes = static_cast<size_t>(EnvLong("GPUWATCH_BUFFER_BYTES", 8 << 20, 0, LONG_MAX));
  c.spool_max_bytes = static_cast<size_t>(EnvLong("GPUWATCH_SPOOL_BYTES", 256l << 20, 0, LONG_MAX));
  c.overhead = EnvShare("GPUWATCH_OVERHEAD", 0.01);
  c.cupti_mode = EnvCuptiMode();
  c.overhead_contended = EnvLong("GPUWATCH_OVERHEAD_CONTENDED", 1, 0, 1) == 1;
  EnvRecordWindow(&c.record_from_s, &c.record_to_s);
  return c;
}

}  // namespace

std::string OutDir() {
  const char* out = std::getenv("GPUWATCH_OUT");
  std::string dir = (out && *out) ? out : "gpuwatch-out";
  if (dir[0] != '/') {
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd)) dir = std::string(cwd) + "/" + dir;
  }
  return dir;
}

std::string CollectorBin() {
  const char* bin = std::getenv("GPUWATCH_COLLECTOR_BIN");
  return (bin && *bin) ? bin : LibraryDir() + "/../bin/gpuwatch-collector";
}

const Config& GetConfig() {
  static const Config* c = new Config(Load());  // leaked on purpose: used during exit
  return *c;
}

}  // namespace gpuwatch::inject
