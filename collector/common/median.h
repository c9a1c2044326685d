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

}  // namespace gpuwatch::collector
