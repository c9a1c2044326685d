// See launches.h.
#include "analyze/launches.h"

#include <algorithm>

namespace gpuwatch::collector {

std::string KernelLabel(const RankFacts& facts, uint32_t id) {
  const std::string* n = facts.Name(id);
  return n ? *n : "kernel#" + std::to_string(id);
}

void LaunchCounter::OnHostCall(const HostCall& c) {
  if (c.captured) return;  // recorded into a graph: ran nothing
  if (c.api == wire::CUDA_DRIVER_LAUNCH_KERNEL) {
    ++driver_launches_;
    return;
  }
  if (c.api != wire::CUDA_LAUNCH_KERNEL) return;
  ++launches_;
  launch_ns_ += c.dur_ns;
  CountKernel(c.name_id, 1);
}

// The launches the library summarized (their runs, CUDA_LAUNCH_RUN, only place them).
void LaunchCounter::OnLaunchTally(const wire::LaunchTally& t) {
  if (t.api() == wire::CUDA_DRIVER_LAUNCH_KERNEL) {
    driver_launches_ += t.launches();
    return;
  }
  if (t.api() != wire::CUDA_LAUNCH_KERNEL) return;
  launches_ += t.launches();
  launch_ns_ += t.ns();
  CountKernel(t.name_id(), t.launches());
}

void LaunchCounter::CountKernel(uint32_t name_id, uint64_t launches) {
  auto it = by_id_.find(name_id);
  if (it != by_id_.end())
    it->second += launches;
  else if (by_id_.size() < LaunchFigures::kMaxKernels)
    by_id_.emplace(name_id, launches);
}

LaunchFigures LaunchCounter::Result(const RankFacts& facts) const {
  LaunchFigures f;
  f.launches = launches_;
  f.launch_ns = launch_ns_;
  f.driver_launches = driver_launches_;
  for (const auto& [id, n] : by_id_) f.by_name[KernelLabel(facts, id)] += n;
  return f;
}

void LaunchFigures::Merge(const LaunchFigures& o) {
  launches += o.launches;
  launch_ns += o.launch_ns;
  driver_launches += o.driver_launches;
  for (const auto& [name, n] : o.by_name) {
    auto it = by_name.find(name);
    if (it != by_name.end())
      it->second += n;
    else if (by_name.size() < kMaxKernels)
      by_name.emplace(name, n);
  }
}

std::vector<std::pair<std::string, uint64_t>> LaunchFigures::Top(size_t n) const {
  std::vector<std::pair<std::string, uint64_t>> v(by_name.begin(), by_name.end());
  n = std::min(n, v.size());
  std::partial_sort(v.begin(), v.begin() + n, v.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  v.resize(n);
  return v;
}

}  // namespace gpuwatch::collector
