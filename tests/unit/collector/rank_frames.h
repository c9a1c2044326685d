// A rank's frames with a bit of every kind of event, cut into batches anywhere in a step,
// for the checkpoint tests (analyze/rank_checkpoint_test.cpp, ingest/journal_checkpoint_test.cpp).
#pragma once
#include <vector>

#include "fixtures.h"
#include "frames_on_disk.h"
#include "step_loop.h"

namespace gwtest {

namespace loop = gpuwatch::collector::test_loop;
using loop::kMs;
using loop::kUs;

// One rank's frames as a library sends them: a Hello, batches cut every `batch_ms` of the
// run (so a cut falls anywhere in a step), a Goodbye. Each step: host work, three kernel
// launches (one on a side stream that the main one waits for through an event), a copy,
// an all-reduce, a small blocking copy (.item()), memory calls, then a stream sync closing
// an NVTX step range; a CUDA graph launch every 4th step; process, device and thread
// samples; drops. CUPTI records in windows of 8 steps out of every 20 (the overhead
// budget's), so some cuts are inside a window and some outside.
inline std::vector<wire::Frame> RankFrames(int steps, uint64_t batch_ms) {
  std::vector<wire::Frame> frames{Hello("ckpt-job", 0, 2)};
  frames.front().mutable_hello()->set_pid(4242);
  wire::Batch b;
  uint64_t seq = 0, batch_end = 1000 * kMs + batch_ms * kMs;
  uint32_t corr = 0;
  auto flush = [&](uint64_t settled) {
    b.set_seq(++seq);
    b.set_settled_ns(settled);
    frames.push_back(BatchFrame(b));
    b.Clear();
  };
  loop::StepNames(b);
  auto* n = b.add_kernel_names();
  n->set_id(3), n->set_name("ncclDevKernel_AllReduce_Sum_f32");
  n = b.add_kernel_names();
  n->set_id(4), n->set_name("side_kernel");
  n = b.add_kernel_names();
  n->set_id(5), n->set_name("graph_kernel");
  Comm(&b, 7, 2, 0);
  b.mutable_environment()->set_device_sm_count(108);
  b.mutable_environment()->set_device_memory_bytes(uint64_t{80} << 30);
  auto* stack = b.add_python_stacks();
  stack->set_id(1);
  stack->add_frames("train.py:42 in step");
  uint64_t t = 1000 * kMs;
  bool window_open = false;
  uint64_t window_start = 0;
  for (int s = 0; s < steps; ++s) {
    const bool recorded = s % 20 < 8;
    if (recorded && !window_open) window_open = true, window_start = t;
    const uint64_t start = t;
    t += 2 * kMs + (s % 3) * 300 * kUs;  // host work
    auto* hs = b.add_host_samples();
    hs->set_t_ns(t - kMs), hs->set_tid(11), hs->set_stack_id(1), hs->set_in_cuda(false);
    auto* rec = loop::Ev(b, wire::CUDA_EVENT_RECORD, t, 2 * kUs);
    rec->set_stream(0x200), rec->set_seq(0x900);
    for (int k = 0; k < 3; ++k) {
      const uint64_t stream = k == 2 ? 0x200 : 0x100;
      auto* e = loop::Ev(b, wire::CUDA_LAUNCH_KERNEL, t, 8 * kUs);
      e->set_stream(stream), e->set_name_id(k == 2 ? 4 : 2), e->set_tid(11);
      if (recorded) {
        loop::Kernel(b, ++corr, t, 8 * kUs, t + 20 * kUs + k * 700 * kUs, 600 * kUs, k == 2 ? 4 : 2);
        b.mutable_activities(b.activities_size() - 1)->set_stream(k == 2 ? 2 : 1);
      }
      t += 10 * kUs;
    }
    auto* w = loop::Ev(b, wire::CUDA_STREAM_WAIT_EVENT, t, 1 * kUs);
    w->set_stream(0x100), w->set_seq(0x900);
    auto* c = loop::Ev(b, wire::CUDA_MEMCPY_ASYNC, t, 5 * kUs);
    c->set_copy_kind(wire::COPY_H2D), c->set_bytes(1 << 20), c->set_stream(0x100), c->set_flags(wire::FLAG_PAGEABLE);
    auto* ar = Coll(&b, wire::NCCL_ALL_REDUCE, 7, 4 << 20, 900 * kUs + (s % 5) * 10 * kUs, t + 10 * kUs);
    ar->set_seq(s), ar->set_stream(0x300);
    if (recorded) {
      auto* a = b.add_activities();
      a->set_kind(wire::ACTIVITY_KERNEL), a->set_correlation_id(++corr), a->set_start_ns(t + 2500 * kUs);
      a->set_end_ns(t + 3400 * kUs), a->set_name_id(3), a->set_stream(3);
    }
    if (s % 4 == 0) {
      auto* g = loop::Ev(b, wire::CUDA_GRAPH_LAUNCH, t + 20 * kUs, 6 * kUs);
      g->set_stream(0x100);
      if (recorded) {
        auto* a = b.add_activities();
        a->set_kind(wire::ACTIVITY_KERNEL), a->set_correlation_id(++corr), a->set_start_ns(t + 3500 * kUs);
        a->set_end_ns(t + 3600 * kUs), a->set_name_id(5), a->set_stream(1), a->set_graph_id(9);
      }
    }
    auto* m = loop::Ev(b, wire::CUDA_MALLOC, t + 30 * kUs, 3 * kUs);
    m->set_bytes(64 << 20), m->set_address(0x10000 + s);
    if (s > 0) {
      auto* f = loop::Ev(b, wire::CUDA_FREE, t + 35 * kUs, 2 * kUs);
      f->set_address(0x10000 + s - 1);
    }
    auto* item = loop::Ev(b, wire::CUDA_MEMCPY, t + 40 * kUs, 200 * kUs);
    item->set_copy_kind(wire::COPY_D2H), item->set_bytes(4), item->set_site_id(0);
    t += 4 * kMs;
    auto* sync = loop::Ev(b, wire::CUDA_STREAM_SYNCHRONIZE, t - 500 * kUs, 500 * kUs);
    sync->set_stream(0x100), sync->set_tid(11);
    auto* r = loop::Ev(b, wire::NVTX_RANGE, start, t - start);
    r->set_name_id(1), r->set_tid(11);
    if (s % 3 == 0) {
      auto* p = b.add_proc_samples();
      p->set_t_ns(t), p->set_cpu_ns(s * 3 * kMs), p->set_read_chars(s * 4096), p->set_processes(2);
      p->set_run_wait_ns(s * 100 * kUs);
      auto* d = b.add_device_samples();
      d->set_t_ns(t), d->set_gpu_util_pct(60 + s % 30), d->set_memory_used_bytes((10 + s) << 20);
      d->set_memory_total_bytes(uint64_t{80} << 30), d->set_sm_clock_mhz(1400), d->set_power_mw(250000);
      d->set_power_limit_mw(400000), d->set_temperature_c(60);
    }
    if (window_open && (s % 20 == 7 || s == steps - 1)) {
      auto* win = b.add_cupti_windows();
      win->set_start_ns(window_start), win->set_end_ns(t);
      window_open = false;
    }
    if (s == steps / 2) Drop(&b, "ring_full", 5);
    while (t >= batch_end) {
      if (window_open) b.set_cupti_window_open_since_ns(window_start);
      flush(t - 3 * kMs);
      batch_end += batch_ms * kMs;
    }
  }
  flush(t);
  wire::Frame bye;
  bye.mutable_goodbye()->set_events_sent(1);
  frames.push_back(bye);
  return frames;
}

}  // namespace gwtest
