// Number and text formatting shared by every block of summary.txt. Fixed formats only
// (no locale, no terminal width probing) so the same input always prints the same bytes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>
#include <string_view>

namespace gpuwatch::collector {

inline constexpr size_t kTextWidth = 80;
// How many rows the top-N tables (kernels by launches, by time) list, in text and JSON alike.
inline constexpr size_t kTopN = 10;

// Decimal units, like GB/s: "512 B", "1.50 kB", "12.00 MB", "3.25 GB".
std::string FmtBytes(uint64_t bytes);
// Adaptive: "850.0 us", "12.345 ms", "1.234 s".
std::string FmtDuration(double seconds);
// The same, from nanoseconds.
std::string FmtDurationNs(uint64_t ns);
// "%.2f" of a rate in GB/s.
std::string FmtRate(double gbps);
// printf into a std::string.
std::string Printf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// Control characters replaced by '?', cut to `width` columns with a trailing "...".
// Names from ranks go through this before they reach a terminal.
std::string Clip(std::string_view s, size_t width);

inline bool EndsWith(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

// "rank 3", "ranks 0–3, 5": runs of consecutive ranks as ranges (ranks in ascending order).
std::string RanksText(const std::vector<int>& ranks);
// seconds from nanoseconds.
inline double Seconds(uint64_t ns) { return static_cast<double>(ns) * 1e-9; }
// milliseconds from seconds.
inline double Millis(double seconds) { return seconds * 1e3; }
// bytes / seconds / 1e9, 0 when there is no time.
inline double Gbps(double bytes, double seconds) {
  return seconds > 0 ? bytes / seconds / 1e9 : 0.0;
}

}  // namespace gpuwatch::collector
