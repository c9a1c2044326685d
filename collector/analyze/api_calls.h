// api_calls: every hooked CUDA/NCCL call by API, as the hooks saw it (calls and host time),
// with how many were recorded into a CUDA graph (captured: nothing ran) and how many
// queries answered "not ready", and the calls that failed (returned an error). The one table where every hooked API shows, including those
// no other figure is about (cudaStreamWaitEvent, cudaLaunchHostFunc, the capture calls).
#pragma once
#include <cstdint>
#include <map>

#include "interpret/event_sink.h"

namespace gpuwatch::collector {

struct ApiCallFigures {
  struct Api {
    uint64_t count = 0, ns = 0, captured = 0, not_ready = 0;
    uint64_t failed = 0;  // calls that returned an error: not in `count`, nor in any other figure
    void Add(const Api& o) {
      count += o.count, ns += o.ns, captured += o.captured, not_ready += o.not_ready, failed += o.failed;
    }
  };
  std::map<wire::Api, Api> by_api;
  void Merge(const ApiCallFigures& o);
};

class ApiCallCounter final : public EventSink {
 public:
  void OnHostCall(const HostCall& c) override;
  void OnFailedCall(const HostCall& c) override { ++f_.by_api[c.api].failed; }
  // Summarized launches are counted by their tallies, which say their API.
  void OnLaunchTally(const wire::LaunchTally& t) override;
  const ApiCallFigures& figures() const { return f_; }

 private:
  friend struct CheckpointAccess;  // rank checkpoints (analyze/checkpoint_access.h)
  ApiCallFigures f_;
};

}  // namespace gpuwatch::collector
