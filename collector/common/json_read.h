// Lenient lookups in a summary.json document: a missing key or a value of another type gives
// the default, so an older or partial summary never throws in the code that reads it back
// (report.html, gpuwatch diff).
#pragma once
#include <cmath>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

namespace gpuwatch::collector::json_read {

using nlohmann::json;

inline const json& Get(const json& j, const char* key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}
inline double Num(const json& j, const char* key, double def = 0) {
  const json& v = Get(j, key);
  return v.is_number() ? v.get<double>() : def;
}
// A count, a size or a number of ranks as T: the number clamped to T's range. A byte total
// that overflowed reads 2^64 as a double, and a plain cast of that is undefined (the fuzzer
// found one in report.html's communicators table).
template <typename T>
T Whole(const json& j, const char* key, T def = 0) {
  const double x = Num(j, key, static_cast<double>(def));
  if (std::isnan(x)) return def;
  if (x <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
  if (x >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(x);
}
inline std::string Str(const json& j, const char* key, const std::string& def = "") {
  const json& v = Get(j, key);
  return v.is_string() ? v.get<std::string>() : def;
}
inline int Int(const json& j, const char* key, int def = -1) {
  const json& v = Get(j, key);
  return v.is_number_integer() ? v.get<int>() : def;
}
inline const json& Arr(const json& j, const char* key) {
  static const json kEmpty = json::array();
  const json& v = Get(j, key);
  return v.is_array() ? v : kEmpty;
}
inline const json& Obj(const json& j, const char* key) {
  static const json kEmpty = json::object();
  const json& v = Get(j, key);
  return v.is_object() ? v : kEmpty;
}

}  // namespace gpuwatch::collector::json_read
