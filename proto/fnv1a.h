// FNV-1a, 64 bits: the one hash of bytes that the library and the collector share
// (communicator identities, call sites, job file names), so equal bytes hash alike everywhere.
// No allocation, no call: safe on the hooks' path.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace gpuwatch {

inline uint64_t Fnv1a(const void* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const unsigned char*>(p)[i]) * 1099511628211ull;
  return h;
}
inline uint64_t Fnv1a(std::string_view s) { return Fnv1a(s.data(), s.size()); }

}  // namespace gpuwatch
