// A subscriber of one rank's interpreted events (interpret/rank_interpreter.h): the
// analyses and the trace writer. Host calls come in order of their order key (start, or
// end for syncs and NVTX ranges), device work in start order with its busy spans and idle
// gaps; the device stream trails the host stream (docs/ARCHITECTURE.md).
#pragma once
#include <cstdint>

#include "gpuwatch.pb.h"
#include "interpret/events.h"

namespace gpuwatch::collector {

class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void OnHostCall(const HostCall&) {}
  // A call that returned an error (FLAG_FAILED): it did nothing, so it reaches no sink as a
  // host call, only here (at arrival).
  virtual void OnFailedCall(const HostCall&) {}
  virtual void OnDeviceWork(const DeviceWork&) {}
  virtual void OnBusy(const BusySpan&) {}
  virtual void OnIdle(const IdleGap&) {}
  // An NVTX step closed (in order).
  virtual void OnStep(const StepMark&) {}
  // Another NVTX range turned out to be the step (the outermost step-like range wins):
  // the steps so far are void.
  virtual void OnStepsReset() {}
  // The rank's process tree, sampled about every 100 ms (at arrival; in order).
  virtual void OnProcSample(const wire::ProcSample&) {}
  // The rank's device as NVML saw it, about once a second (at arrival; in order).
  virtual void OnDeviceSample(const wire::DeviceSample&) {}
  // The host sampler's samples of the CUDA-calling threads (at arrival; in time order).
  virtual void OnThreadSample(const ThreadSample&) {}
  // No idle gap emitted from now on starts before `ns`.
  virtual void OnDeviceSettled(uint64_t) {}
  // Launches the library summarized (CUDA_LAUNCH_RUN events stand for them in time), per
  // kernel and API: what the batch added (at arrival).
  virtual void OnLaunchTally(const wire::LaunchTally&) {}
};

}  // namespace gpuwatch::collector
