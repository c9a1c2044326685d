// GPUWATCH_* parsed, with the defaults config.h documents.
#include "runtime/config.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>

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
  long ring = EnvLong("GPUWATCH_RING_RECORDS", 16384, 64, 1 << 22);
  size_t pow2 = 64;
  while (pow2 < static_cast<size_t>(ring)) pow2 <<= 1;
  c.ring_records = pow2;
  c.flush_ms = static_cast<int>(EnvLong("GPUWATCH_FLUSH_MS", 10, 1, 10000));
  c.call_site_ms = static_cast<double>(EnvLong("GPUWATCH_CALLSITE_US", 1000, 0, 60'000'000)) / 1000.0;
  c.exit_timeout_ms = static_cast<int>(EnvLong("GPUWATCH_EXIT_TIMEOUT_MS", 3000, 0, 600000));
  c.max_buffer_bytes = static_cast<size_t>(EnvLong("GPUWATCH_BUFFER_BYTES", 8 << 20, 0, LONG_MAX));
  c.spool_max_bytes = static_cast<size_t>(EnvLong("GPUWATCH_SPOOL_BYTES", 256l << 20, 0, LONG_MAX));
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
