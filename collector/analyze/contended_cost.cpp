#include "analyze/contended_cost.h"

#include <algorithm>

#include "analyze/host_placement.h"
#include "contention.h"

namespace gpuwatch::collector {

ContendedCost MeasureContendedCost(const RankResult& r) {
  ContendedCost c;
  const OverheadFacts& o = r.overhead;
  const InputIoFigures& io = r.io;
  c.cpus = ParseCpuList(r.env.cpu_affinity).size();
  c.beside_cpu_s = static_cast<double>(o.sender_cpu_ns + o.SamplerThreadNs() + o.collector_cpu_ns) * 1e-9;
  c.known = o.known && io.all_s > 0 && io.all_cpu_s > 0 && c.cpus > 0 && o.collector_cpu_ns > 0;
  if (!c.known) return c;
  const wire::ContentionTally t{io.all_s, io.all_cpu_s, io.all_run_wait_s, io.all_contended_s};
  c.busy_share = t.BusyShare();
  c.stretch = t.Stretch();
  c.added_s = wire::ContendedWall(static_cast<double>(o.AddedNs()) * 1e-9, c.beside_cpu_s, c.stretch, c.busy_share, c.cpus);
  return c;
}

}  // namespace gpuwatch::collector
