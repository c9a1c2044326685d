// The median of a list of figures (the mean of the middle two for an even count; 0 when
// empty): the findings' job figures, the stragglers' waits, the diff's repeated runs.
#pragma once
#include <algorithm>
#include <vector>

namespace gpuwatch::collector {

inline double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The middle element (the upper of the two for an even count; T{} when empty), without
// sorting the rest: integer figures (durations, lags) where a mean of two would be a new one.
template <typename T>
T MiddleOf(std::vector<T> v) {
  if (v.empty()) return T{};
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

}  // namespace gpuwatch::collector
