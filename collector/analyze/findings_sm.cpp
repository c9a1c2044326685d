// small_batch (issue 17): the kernels' grids left SMs without work while the device's memory
// had room for a larger batch. Its time lost is the SM capacity the kernels left idle
// (sm_fill.h): each kernel's time times the share of SMs its grid gave no block, as whole-
// device seconds -- what the same work would have saved had it filled the device.
#include <algorithm>

#include "analyze/findings.h"
#include "common/format.h"
#include "common/thresholds.h"

namespace gpuwatch::collector {

std::optional<Finding> SmallBatch(const RankContext& c, const std::vector<Finding>&) {
  const SmFillFigures& s = c.r.sm_fill;
  const MemoryFigures& m = c.r.memory;
  if (!s.known() || s.idle_sm_ns <= 0 || !m.known() || m.total_bytes == 0) return std::nullopt;
  const double headroom = static_cast<double>(m.headroom_bytes()) / static_cast<double>(m.total_bytes);
  if (headroom < kSmallBatchHeadroom) return std::nullopt;
  // Kernel times are the timeline's (scaled to the run when CUPTI sampled windows of it).
  const GpuFigures& g = c.r.gpu;
  const double scale = g.coverage.sampled && g.coverage.WorkShare() > 0 ? 1.0 / g.coverage.WorkShare() : 1.0;
  const double idle_s = s.idle_sm_ns * 1e-9 * scale;
  Finding f = MakeFinding("small_batch", idle_s, c.run_base);
  nlohmann::json top = nlohmann::json::array();
  for (const SmFillFigures::Shape& k : s.top) top.push_back(ShapeJson(k, scale));
  f.evidence = {{"sm_count", s.sm_count},
                {"sm_fill", s.fill()},
                {"idle_sm_s", idle_s},
                {"kernels", s.kernels},
                {"small_grid_kernels", s.small_grid_kernels},
                {"short_kernel_fraction", g.short_fraction()},
                {"memory_peak_bytes", m.peak_bytes},
                {"memory_total_bytes", m.total_bytes},
                {"memory_headroom_share", headroom},
                {"top_kernels", top}};
  f.summary = Printf("kernels gave work to %.0f%% of the %d SMs (time-weighted) while %.0f%% of the GPU's %s stayed free",
                     100 * s.fill(), s.sm_count, 100 * headroom, FmtBytes(m.total_bytes).c_str());
  return f;
}

}  // namespace gpuwatch::collector
