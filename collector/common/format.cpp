#include "common/format.h"

#include <cstdarg>
#include <cstdio>

namespace gpuwatch::collector {

std::string Printf(const char* fmt, ...) {
  char small[256];
  va_list ap;
  va_start(ap, fmt);
  va_list ap2;
  va_copy(ap2, ap);
  const int n = std::vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  std::string out;
  if (n < 0) {
    va_end(ap2);
    return out;
  }
  if (static_cast<size_t>(n) < sizeof small) {
    out.assign(small, n);
  } else {
    out.resize(n + 1);
    std::vsnprintf(out.data(), out.size(), fmt, ap2);
    out.resize(n);
  }
  va_end(ap2);
  return out;
}

std::string FmtBytes(uint64_t bytes) {
  if (bytes < 1000) return Printf("%llu B", static_cast<unsigned long long>(bytes));
  static const char* kUnits[] = {"kB", "MB", "GB", "TB", "PB", "EB"};
  double v = static_cast<double>(bytes) / 1000.0;
  int u = 0;
  while (v >= 1000.0 && u < 5) {
    v /= 1000.0;
    ++u;
  }
  return Printf("%.2f %s", v, kUnits[u]);
}

std::string FmtDuration(double s) {
  if (s < 1e-3) return Printf("%.1f us", s * 1e6);
  if (s < 1.0) return Printf("%.3f ms", s * 1e3);
  return Printf("%.3f s", s);
}

std::string FmtDurationNs(uint64_t ns) { return FmtDuration(Seconds(ns)); }

std::string FmtRate(double gbps) { return Printf("%.2f", gbps); }

std::string Clip(std::string_view s, size_t width) {
  std::string out;
  out.reserve(s.size() < width ? s.size() : width);
  for (char c : s) out.push_back(static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? '?' : c);
  if (out.size() > width) {
    out.resize(width >= 3 ? width - 3 : 0);
    out += "...";
    out.resize(width);
  }
  return out;
}

std::string RanksText(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    out += (out.empty() ? "" : ", ") + std::to_string(ranks[i]);
    if (j > i) out += (j == i + 1 ? ", " : "\xe2\x80\x93") + std::to_string(ranks[j]);
    i = j + 1;
  }
  return ranks.empty() ? out : (ranks.size() == 1 ? "rank " : "ranks ") + out;
}

}  // namespace gpuwatch::collector
