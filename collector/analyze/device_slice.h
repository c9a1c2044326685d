// Device figures of a span of the run (one step, or the whole run), in ns.
#pragma once
#include <cstdint>

#include "interpret/events.h"

namespace gpuwatch::collector {

struct DeviceSlice {
  uint64_t busy = 0, noncomm_busy = 0;       // unions of all work / all work but NCCL kernels
  uint64_t compute = 0, comm = 0, copy = 0;  // sums of durations: kernels, NCCL kernels, copies and memsets
  uint64_t idle[kIdleKinds] = {};            // idle gaps by IdleKind
  uint64_t graph_kernels = 0;                // kernels run by CUDA graph launches (a count)

  uint64_t IdleTotal() const { return idle[0] + idle[1] + idle[2] + idle[3]; }
  // Communication that compute did not hide.
  uint64_t ExposedComm() const { return busy > noncomm_busy ? busy - noncomm_busy : 0; }
  void Add(const DeviceSlice& o) {
    busy += o.busy;
    noncomm_busy += o.noncomm_busy;
    compute += o.compute;
    comm += o.comm;
    copy += o.copy;
    for (int i = 0; i < kIdleKinds; ++i) idle[i] += o.idle[i];
    graph_kernels += o.graph_kernels;
  }
  // Charges one event's worth: a busy span, a piece of work, an idle gap (`n` ns of it).
  void AddBusy(bool noncomm, uint64_t n) { (noncomm ? noncomm_busy : busy) += n; }
  void AddWork(const DeviceWork& w, uint64_t n) {
    (w.kind == wire::ACTIVITY_KERNEL ? (w.comm ? comm : compute) : copy) += n;
    graph_kernels += w.graph_id && w.kind == wire::ACTIVITY_KERNEL;
  }
};

}  // namespace gpuwatch::collector
