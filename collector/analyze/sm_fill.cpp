// See sm_fill.h.
#include "analyze/sm_fill.h"

#include <algorithm>
#include <limits>

#include "common/kernel_names.h"

namespace gpuwatch::collector {
namespace {

constexpr uint32_t kOtherKernels = std::numeric_limits<uint32_t>::max();
// Folded shapes keep their grid up to this many blocks (more fills any GPU built so far).
constexpr uint64_t kFoldBlocks = 1024;

}  // namespace

double TheoreticalOccupancy(const LaunchGeometry& g) {
  using L = SmLimits;
  if (g.block_threads == 0) return 0;
  const uint64_t warps = (g.block_threads + 31) / 32;
  if (warps > L::kWarps) return 0;
  uint64_t blocks = std::min<uint64_t>(L::kBlocks, L::kWarps / warps);
  if (g.registers) {
    const uint64_t per_warp = (uint64_t{g.registers} * 32 + L::kRegisterUnit - 1) / L::kRegisterUnit * L::kRegisterUnit;
    blocks = std::min<uint64_t>(blocks, L::kRegisters / per_warp / warps);
  }
  if (g.shared_bytes) blocks = std::min<uint64_t>(blocks, L::kSharedBytes / (g.shared_bytes + L::kBlockReservedShared));
  return static_cast<double>(blocks * warps) / L::kWarps;
}

nlohmann::json ShapeJson(const SmFillFigures::Shape& k, double scale) {
  return {{"name", DemangleName(k.name)},
          {"count", k.count},
          {"device_s", static_cast<double>(k.ns) * 1e-9 * scale},
          {"blocks", k.geometry.blocks},
          {"block_threads", k.geometry.block_threads},
          {"registers_per_thread", k.geometry.registers},
          {"shared_bytes", k.geometry.shared_bytes},
          {"sm_share", k.sm_share},
          {"occupancy", k.occupancy},
          {"idle_sm_s", k.idle_sm_ns() * 1e-9 * scale}};
}

void SmFillCounter::OnDeviceWork(const DeviceWork& w) {
  if (w.kind != wire::ACTIVITY_KERNEL || w.comm || w.geometry.blocks == 0) return;
  const LaunchGeometry& g = w.geometry;
  Key key{w.name_id, g.blocks, g.block_threads, g.registers, g.shared_bytes};
  if (shapes_.size() >= kMaxShapes && !shapes_.count(key))
    key = Key{kOtherKernels, std::min(g.blocks, kFoldBlocks), 0, 0, 0};
  Tot& t = shapes_[key];
  ++t.count;
  t.ns += w.dur_ns();
}

SmFillFigures SmFillCounter::Result(const RankFacts& facts) const {
  SmFillFigures f;
  f.sm_count = facts.env().device_sm_count;
  if (f.sm_count <= 0) return f;
  const auto sms = static_cast<uint64_t>(f.sm_count);
  std::vector<SmFillFigures::Shape> shapes;
  for (const auto& [key, t] : shapes_) {
    const auto& [name_id, blocks, threads, registers, shared] = key;
    f.kernels += t.count;
    f.kernel_ns += t.ns;
    SmFillFigures::Shape s;
    s.geometry = LaunchGeometry{blocks, threads, registers, shared};
    s.count = t.count;
    s.ns = t.ns;
    s.sm_share = static_cast<double>(std::min(blocks, sms)) / static_cast<double>(sms);
    s.occupancy = TheoreticalOccupancy(s.geometry);
    if (blocks >= sms) continue;
    f.small_grid_kernels += t.count;
    f.idle_sm_ns += s.idle_sm_ns();
    const std::string* name = name_id == kOtherKernels ? nullptr : facts.Name(name_id);
    s.name = name ? *name : "(other kernels)";
    shapes.push_back(std::move(s));
  }
  std::sort(shapes.begin(), shapes.end(), [](const auto& a, const auto& b) {
    return a.idle_sm_ns() != b.idle_sm_ns() ? a.idle_sm_ns() > b.idle_sm_ns() : a.name < b.name;
  });
  if (shapes.size() > SmFillFigures::kTop) shapes.resize(SmFillFigures::kTop);
  f.top = std::move(shapes);
  return f;
}

}  // namespace gpuwatch::collector
