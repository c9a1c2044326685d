// sampled_estimate: what a sampled device timeline (the overhead budget's windows) says about
// the whole run, where the windows' own figures are not a fair sample of it.
//
// Communication. A rank's first window records the start whole, where ranks wait for each
// other in their first collectives: the windows' NCCL kernels read a 2-rank run's
// communication at 2-3x the device's. The collectives' own GPU times cover every call —
// CUPTI's kernels inside windows, the CUDA event pairs outside (record/collective_timer.h) —
// so they stand for the communication, of the run and of a typical step; the windows say
// only how much of it compute hid. That share is measured apart in the first window and the
// later ones, each for its own calls, and held within the active span (GpuCounter::
// CommFromCalls: the run's), which the overlap figures and a typical step take; the
// communicators split it as the windows saw them. It stays the windows' view: a rank slowed
// by its own window makes its peers wait in theirs, so on a rank that waits, exposed time can
// read 1.5-5x the device's (docs/PERFORMANCE.md).
//
// Steps. Steps inside windows ran slower by CUPTI's own cost, and the GPU waited that much
// longer: what they ran beyond the mean step comes out of their idle time.
#pragma once
#include <cstddef>
#include <cstdint>

#include "analyze/device_slice.h"

namespace gpuwatch::collector {

struct RankResult;

// `part` of `total` as measured, for a total of `to`: the same share (0 when nothing was
// measured).
uint64_t SameShare(uint64_t part, uint64_t total, uint64_t to);

// A sampled rank's overlap figures and each communicator's from its collectives (gpu.run's
// communication is GpuCounter's). Nothing unless sampled.
void EstimateSampledComm(RankResult& r);

// `dev`, the sum of `covered` steps inside windows (`covered_ns` long together), as that many
// typical steps of the run: their communication the mean step's, by its collectives, their
// idle time less what they ran beyond the mean step. Nothing when the run was not sampled.
// Every per-step view (MeanPerStep, the findings) goes through it.
void TypicalCoveredSteps(const RankResult& r, size_t covered, uint64_t covered_ns, DeviceSlice& dev);

}  // namespace gpuwatch::collector
