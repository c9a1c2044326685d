// launches: kernel launch calls the library saw (cudaLaunchKernel and friends; launches
// made through driver entry points, e.g. by NCCL, cuBLASLt or Triton, are not among them:
// those handed out by cudaGetDriverEntryPoint are counted apart) and the most launched
// kernels by name.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "interpret/event_sink.h"
#include "interpret/rank_facts.h"

namespace gpuwatch::collector {

struct LaunchFigures {
  // Distinct kernels kept (per rank and per job); launches beyond still count in `launches`.
  static constexpr size_t kMaxKernels = 10000;
  uint64_t launches = 0, launch_ns = 0;
  uint64_t driver_launches = 0;  // cuLaunchKernel through a driver entry point (not in `launches`)
  std::unordered_map<std::string, uint64_t> by_name;  // mangled name -> launches

  // The `n` most launched, most first, ties by name (deterministic); names mangled.
  std::vector<std::pair<std::string, uint64_t>> Top(size_t n) const;
  void Merge(const LaunchFigures& o);
};

class LaunchCounter final : public EventSink {
 public:
  void OnHostCall(const HostCall& c) override;
  void OnLaunchTally(const wire::LaunchTally& t) override;
  // A kernel registered twice under one name counts once.
  LaunchFigures Result(const RankFacts& facts) const;

 private:
  friend struct CheckpointAccess;  // rank checkpoints (analyze/checkpoint_access.h)
  uint64_t launches_ = 0, launch_ns_ = 0, driver_launches_ = 0;
  std::unordered_map<uint32_t, uint64_t> by_id_;  // launches per name id (bounded)
  void CountKernel(uint32_t name_id, uint64_t launches);
};

// "kernel#N" for a name the rank never sent.
std::string KernelLabel(const RankFacts& facts, uint32_t id);

}  // namespace gpuwatch::collector
