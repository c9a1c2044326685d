// Synthetic batches for the diagnosis tests (test_steps.cpp, test_host_findings.cpp): a
// training loop of NVTX steps, each host work then one kernel and a stream sync.
#pragma once
#include <cstdint>

#include "gpuwatch.pb.h"

namespace gpuwatch::collector::test_loop {

namespace wire = gpuwatch::wire;
constexpr uint64_t kMs = 1'000'000, kUs = 1'000;

inline wire::Event* Ev(wire::Batch& b, wire::Api api, uint64_t t, uint64_t dur) {
  auto* e = b.add_events();
  e->set_api(api);
  e->set_t_ns(t);
  e->set_dur_ns(dur);
  return e;
}

inline void Kernel(wire::Batch& b, uint32_t corr, uint64_t api_t, uint64_t api_dur, uint64_t start,
                   uint64_t dur, uint32_t name_id = 2) {
  auto* a = b.add_activities();
  a->set_kind(wire::ACTIVITY_API);
  a->set_correlation_id(corr);
  a->set_start_ns(api_t);
  a->set_end_ns(api_t + api_dur);
  auto* k = b.add_activities();
  k->set_kind(wire::ACTIVITY_KERNEL);
  k->set_correlation_id(corr);
  k->set_start_ns(start);
  k->set_end_ns(start + dur);
  k->set_name_id(name_id);
}

// The loop's names: NVTX range 1 "train_step", kernel 2 "fwd"; the timeline from CUPTI.
inline void StepNames(wire::Batch& b) {
  b.set_gpu_source(wire::GPU_SOURCE_CUPTI);
  auto* n = b.add_kernel_names();
  n->set_id(1);
  n->set_name("train_step");
  n = b.add_kernel_names();
  n->set_id(2);
  n->set_name("fwd");
}

// `steps` steps of `host_ms` host work then one `gpu_ms` kernel, then a stream sync.
inline wire::Batch Loop(int steps, uint64_t host_ms, uint64_t gpu_ms, uint64_t t0 = 1000 * kMs,
                        uint64_t* end = nullptr) {
  wire::Batch b;
  StepNames(b);
  uint64_t t = t0;
  for (int s = 0; s < steps; ++s) {
    const uint64_t start = t;
    t += host_ms * kMs;
    Ev(b, wire::CUDA_LAUNCH_KERNEL, t, 10 * kUs);
    Kernel(b, s + 1, t, 10 * kUs, t + 10 * kUs, gpu_ms * kMs);
    t += 10 * kUs;
    Ev(b, wire::CUDA_STREAM_SYNCHRONIZE, t, gpu_ms * kMs);
    t += gpu_ms * kMs + 10 * kUs;
    auto* r = Ev(b, wire::NVTX_RANGE, start, t - start);
    r->set_name_id(1);
  }
  if (end) *end = t;
  return b;
}


}  // namespace gpuwatch::collector::test_loop
