// sm_fill: how much of the device the kernels' grids can occupy (issue 17, `small_batch`).
// A kernel whose grid has fewer blocks than the device has SMs leaves the other SMs with
// nothing of its own to run for its whole duration: a batch (or a tensor) too small to
// split across the GPU. From CUPTI's launch geometry (LaunchGeometry); NCCL's kernels are
// left out (their grid is the channels, chosen for bandwidth, not the batch).
//
// Kernels are kept by shape (name, grid, block, registers, shared memory), bounded: beyond
// kMaxShapes shapes, new ones fold into one "(other kernels)" shape per grid size.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "interpret/event_sink.h"
#include "interpret/rank_facts.h"

namespace gpuwatch::collector {

// Hopper's (sm_90: H100, H200) per-SM limits, the device this project targets; Ampere's
// A100 differs only in shared memory (164 KiB). CUDA C Programming Guide, "Compute
// capabilities", table of technical specifications.
struct SmLimits {
  static constexpr uint32_t kWarps = 64, kBlocks = 32, kRegisters = 65536, kSharedBytes = 228 * 1024;
  static constexpr uint32_t kRegisterUnit = 256;       // registers are allocated per warp in units of 256
  static constexpr uint32_t kBlockReservedShared = 1024;  // the system's 1 KiB of shared memory per block
};

// The theoretical occupancy of a block shape: resident warps per SM over the SM's 64, from
// the limits above (threads, blocks, registers, shared memory). 0 when the shape cannot run.
double TheoreticalOccupancy(const LaunchGeometry& g);

struct SmFillFigures {
  struct Shape {
    std::string name;  // mangled, as CUPTI named it
    LaunchGeometry geometry;
    uint64_t count = 0, ns = 0;
    double sm_share = 0;   // SMs its grid gives a block: min(blocks, sm_count) / sm_count
    double occupancy = 0;  // TheoreticalOccupancy
    double idle_sm_ns() const { return static_cast<double>(ns) * (1 - sm_share); }
  };
  static constexpr size_t kTop = 5;

  int sm_count = 0;                   // from the environment; 0: not known (figures empty)
  uint64_t kernels = 0, kernel_ns = 0;  // computation kernels with a launch geometry
  uint64_t small_grid_kernels = 0;    // of them, grids with fewer blocks than SMs
  double idle_sm_ns = 0;              // kernel time x the share of SMs its grid left without a block
  std::vector<Shape> top;             // by idle SM time, at most kTop (only shapes that left SMs idle)

  bool known() const { return sm_count > 0 && kernels > 0; }
  // The kernels' mean share of the SMs, weighted by their time.
  double fill() const { return kernel_ns ? 1 - idle_sm_ns / static_cast<double>(kernel_ns) : 0; }
};

// One shape as summary.json shows it (gpu.sm_fill.top_small_grids, small_batch's evidence):
// its times scaled by `scale` (the run over what CUPTI recorded).
nlohmann::json ShapeJson(const SmFillFigures::Shape& k, double scale = 1.0);

class SmFillCounter final : public EventSink {
 public:
  static constexpr size_t kMaxShapes = 4096;

  void OnDeviceWork(const DeviceWork& w) override;
  // The figures on a device of the environment's SM count.
  SmFillFigures Result(const RankFacts& facts) const;

 private:
  friend struct CheckpointAccess;  // rank checkpoints (analyze/checkpoint_access.h)
  struct Tot {
    uint64_t count = 0, ns = 0;
  };
  // (name id, blocks, threads, registers, shared bytes); name id UINT32_MAX: other kernels.
  using Key = std::tuple<uint32_t, uint64_t, uint32_t, uint32_t, uint32_t>;
  std::map<Key, Tot> shapes_;
};

}  // namespace gpuwatch::collector
