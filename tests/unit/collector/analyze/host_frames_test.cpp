// Host frames (issue 16) on synthetic batches: the host sampler's samples of the training
// thread joined with the GPU's host-wait gaps, the frames classified (python_frames.h), and
// what the GPU's wait is then called: data_loading or host_overhead.
#include <catch2/catch.hpp>

#include "findings_lookup.h"
#include "analyze/findings.h"
#include "analyze/rank_model.h"
#include "interpret/native_frames.h"
#include "interpret/python_frames.h"
#include "step_loop.h"

namespace wire = gpuwatch::wire;
namespace dg = gpuwatch::collector;

namespace {

using namespace gpuwatch::collector::test_loop;
constexpr uint64_t kT0 = 1000 * kMs;
constexpr uint32_t kLog = 1, kLoader = 2, kWaiting = 3;

void Stack(wire::Batch& b, uint32_t id, std::vector<std::string> frames) {
  auto* s = b.add_python_stacks();
  s->set_id(id);
  for (auto& f : frames) s->add_frames(f);
}

// A C++ job's stacks (native frames, as the library names them): the loader's is a read.
void NativeStack(wire::Batch& b, uint32_t id, std::vector<std::string> frames, const std::string& blocked_in) {
  Stack(b, id, std::move(frames));
  auto* s = b.mutable_python_stacks(b.python_stacks_size() - 1);
  s->set_native(true);
  s->set_blocked_in(blocked_in);
}

// Every 10 ms over the loop: in each 40 ms of host work, `loader_ms` in a DataLoader, the
// rest in log_metrics; waiting in the sync otherwise. Thread 7, which made no CUDA call, is
// sampled too: in log_metrics all along.
wire::Batch Samples(uint64_t end, uint64_t loader_ms, bool native = false) {
  wire::Batch b;
  if (native) {
    NativeStack(b, kLog, {"log_metrics() (app)", "main (app)", "__libc_start_call_main (libc.so.6)"}, "");
    NativeStack(b, kLoader, {"read (libc.so.6)", "load_batch(int) (app)", "main (app)"}, "read");
    NativeStack(b, kWaiting, {"libcudart.so.12+0x1234", "main (app)"}, "futex");
  } else {
    Stack(b, kLog, {"/home/u/train.py:10 in log_metrics", "/home/u/train.py:50 in main"});
    Stack(b, kLoader, {"/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py:5 in __next__",
                       "/home/u/train.py:40 in main"});
    Stack(b, kWaiting, {"/home/u/train.py:45 in main"});
  }
  const uint64_t step = 50 * kMs + 20 * kUs;  // Loop(…, 40, 10): host, launch, sync
  for (uint64_t t = kT0 + 5 * kMs; t < end; t += 10 * kMs) {
    const uint64_t in_step = (t - kT0) % step;
    const uint32_t stack = in_step < loader_ms * kMs ? kLoader : in_step < 40 * kMs ? kLog : kWaiting;
    auto* s = b.add_host_samples();
    s->set_t_ns(t);
    s->set_tid(0);
    s->set_stack_id(stack);
    auto* other = b.add_host_samples();
    other->set_t_ns(t);
    other->set_tid(7);
    other->set_stack_id(kLog);
  }
  b.mutable_host_sampling()->set_hz(100);
  return b;
}

dg::RankResult Run(uint64_t loader_ms, bool samples_first, bool native = false) {
  dg::RankModel c;
  wire::Hello h;
  h.set_rank(0);
  c.OnHello(h);
  uint64_t end = 0;
  const wire::Batch loop = Loop(20, 40, 10, kT0, &end);
  const wire::Batch samples = Samples(end, loader_ms, native);
  if (samples_first) c.OnBatch(samples);
  c.OnBatch(loop);
  if (!samples_first) c.OnBatch(samples);
  c.Flush();
  return c.Result();
}

using gpuwatch::collector::test::Find;

}  // namespace

TEST_CASE("collector: host frames name the user's code the GPU waited for") {
  const bool samples_first = GENERATE(true, false);
  INFO("samples first: " << samples_first);
  const dg::RankResult r = Run(10, samples_first);
  const dg::HostFramesFigures& hf = r.host_frames;
  CHECK(hf.tid == 0);
  CHECK(hf.samples >= 70);  // 4 a step in the gaps, 20 steps (thread 7's not counted)
  CHECK(hf.samples <= 80);
  REQUIRE(hf.frames.size() == 2);
  CHECK(hf.frames[0].where == "/home/u/train.py:10 in log_metrics");
  CHECK(hf.frames[0].share == Approx(0.75).margin(0.05));
  CHECK(hf.frames[1].where == "/home/u/train.py:40 in main");  // the DataLoader's caller
  CHECK(hf.data_loading_share == Approx(0.25).margin(0.05));
  CHECK(Find(r.findings, "data_loading") == nullptr);
  const dg::Finding* f = Find(r.findings, "host_overhead");
  REQUIRE(f != nullptr);
  CHECK(f->evidence["host_frames"][0]["where"] == "/home/u/train.py:10 in log_metrics");
  CHECK(f->fix.find("u/train.py:10 in log_metrics") != std::string::npos);
  CHECK(f->fix.find("/home/u") == std::string::npos);  // sentences name the file's last parts
}

TEST_CASE("collector: host frames in a DataLoader keep the wait data loading") {
  const dg::RankResult r = Run(30, true);
  CHECK(r.host_frames.data_loading_share == Approx(0.75).margin(0.05));
  CHECK(Find(r.findings, "host_overhead") == nullptr);
  const dg::Finding* f = Find(r.findings, "data_loading");
  REQUIRE(f != nullptr);
  CHECK(f->evidence["host_frames"][0]["where"] == "/home/u/train.py:40 in main");
}

TEST_CASE("collector: without host samples the wait stays data loading, without frames") {
  dg::RankModel c;
  c.OnBatch(Loop(20, 40, 10, kT0));
  c.Flush();
  const dg::RankResult& r = c.Result();
  CHECK_FALSE(r.host_frames.known());
  const dg::Finding* f = Find(r.findings, "data_loading");
  REQUIRE(f != nullptr);
  CHECK_FALSE(f->evidence.contains("host_frames"));
}

TEST_CASE("collector: which Python frames are the framework's") {
  CHECK(dg::IsFrameworkFrame("/venv/lib/python3.11/site-packages/torch/_tensor.py:10 in item"));
  CHECK(dg::IsFrameworkFrame("/usr/lib/python3/dist-packages/numpy/core.py:1 in f"));
  CHECK(dg::IsFrameworkFrame("/src/pytorch/torch/nn/modules/module.py:1 in _call_impl"));
  CHECK(dg::IsFrameworkFrame("/usr/lib/python3.11/logging/__init__.py:1 in info"));
  CHECK(dg::IsFrameworkFrame("<frozen importlib._bootstrap>:1 in _load"));
  CHECK_FALSE(dg::IsFrameworkFrame("/home/u/train.py:42 in step"));
  CHECK_FALSE(dg::IsFrameworkFrame("train.py:42 in torch_step"));  // a function name is not a path
  CHECK_FALSE(dg::IsFrameworkFrame("/home/u/mytorch/train.py:3 in f"));
  CHECK(dg::UserFrame({"/x/site-packages/torch/a.py:1 in a", "/home/u/t.py:2 in b", "/home/u/t.py:9 in c"}) ==
        "/home/u/t.py:2 in b");
  CHECK(dg::UserFrame({"/x/site-packages/torch/a.py:1 in a"}) == "/x/site-packages/torch/a.py:1 in a");
  CHECK(dg::UserFrame({}).empty());
  CHECK(dg::ShortWhere("/home/u/proj/train.py:42 in step") == "proj/train.py:42 in step");
  CHECK(dg::ShortWhere("train.py:42 in step") == "train.py:42 in step");
  CHECK(dg::ShortWhere("/t.py:1 in f") == "/t.py:1 in f");
  CHECK(dg::IsDataLoading({"/x/site-packages/torch/utils/data/dataloader.py:1 in __next__", "/home/u/t.py:2 in b"}));
  CHECK_FALSE(dg::IsDataLoading({"/home/u/t.py:2 in data_loader"}));
}

// Issue 16 without Python: the same loop as a C++ job's native frames. The frame is the
// innermost outside the system's libraries; a blocked read is input (data loading).
TEST_CASE("collector: native host frames name the user's function and what it was blocked in") {
  const dg::RankResult r = Run(10, true, true);
  const dg::HostFramesFigures& hf = r.host_frames;
  REQUIRE(hf.frames.size() == 2);
  CHECK(hf.frames[0].where == "log_metrics() (app)");
  CHECK(hf.frames[0].blocked_in.empty());
  CHECK(hf.frames[0].share == Approx(0.75).margin(0.05));
  CHECK(hf.frames[1].where == "load_batch(int) (app)");
  CHECK(hf.frames[1].blocked_in == "read");
  CHECK(hf.data_loading_share == Approx(0.25).margin(0.05));
  const dg::Finding* f = Find(r.findings, "host_overhead");
  REQUIRE(f != nullptr);
  CHECK(f->evidence["host_frames"][1]["blocked_in"] == "read");
  CHECK_FALSE(f->evidence["host_frames"][0].contains("blocked_in"));
  // Mostly blocked in the read: data loading, the read named first.
  const dg::RankResult loading = Run(30, false, true);
  CHECK(loading.host_frames.data_loading_share == Approx(0.75).margin(0.05));
  const dg::Finding* l = Find(loading.findings, "data_loading");
  REQUIRE(l != nullptr);
  CHECK(l->evidence["host_frames"][0]["where"] == "load_batch(int) (app)");
  CHECK(Find(loading.findings, "host_overhead") == nullptr);
}

TEST_CASE("collector: which native frames are the system's, and what a blocked syscall waits for") {
  CHECK(dg::IsSystemFrame("read (libc.so.6)"));
  CHECK(dg::IsSystemFrame("libc.so.6+0x1234"));
  CHECK(dg::IsSystemFrame("std::thread::_State::_M_run() (libstdc++.so.6)"));
  CHECK(dg::IsSystemFrame("libcudart.so.12+0x99"));
  CHECK(dg::IsSystemFrame("0x7f0000001234"));
  CHECK_FALSE(dg::IsSystemFrame("spin_compute(double) (gw_native_frames_app)"));
  CHECK_FALSE(dg::IsSystemFrame("libmymodel.so+0x40"));
  CHECK_FALSE(dg::IsSystemFrame("f(std::vector<int> (*)()) (app)"));  // parentheses in the name
  CHECK(dg::UserNativeFrame({"read (libc.so.6)", "load(int) (app)", "main (app)"}) == "load(int) (app)");
  CHECK(dg::UserNativeFrame({"read (libc.so.6)"}) == "read (libc.so.6)");
  CHECK(dg::UserNativeFrame({}).empty());
  CHECK(dg::BlockedCause("read") == "input");
  CHECK(dg::BlockedCause("pread64") == "input");
  CHECK(dg::BlockedCause("futex") == "producer");
  CHECK(dg::BlockedCause("write").empty());
  CHECK(dg::BlockedCause("").empty());
}

TEST_CASE("collector: host frames are the samples of the thread whose launch ended the gap") {
  // A DDP-like job: thread 5 launches the step's work (the forward), while thread 0 makes the
  // most CUDA calls (the syncs and step ranges: autograd's thread in a real job) and sits in
  // a DataLoader frame all along. The GPU waited for thread 5's host work, not for data.
  dg::RankModel c;
  wire::Hello h;
  h.set_rank(0);
  c.OnHello(h);
  uint64_t end = 0;
  wire::Batch loop = Loop(20, 40, 10, kT0, &end);
  for (auto& e : *loop.mutable_events())
    if (e.api() == wire::CUDA_LAUNCH_KERNEL) e.set_tid(5);
  wire::Batch b;
  Stack(b, kLog, {"/home/u/train.py:10 in log_metrics", "/home/u/train.py:50 in main"});
  Stack(b, kLoader, {"/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py:5 in __next__",
                     "/home/u/train.py:40 in main"});
  for (uint64_t t = kT0 + 5 * kMs; t < end; t += 10 * kMs)
    for (const auto& [tid, stack] : {std::pair{0u, kLoader}, std::pair{5u, kLog}}) {
      auto* s = b.add_host_samples();
      s->set_t_ns(t);
      s->set_tid(tid);
      s->set_stack_id(stack);
    }
  b.mutable_host_sampling()->set_hz(100);
  c.OnBatch(loop);
  c.OnBatch(b);
  c.Flush();
  const dg::RankResult& r = c.Result();
  CHECK(r.host_frames.tid == 0);  // the training thread by calls
  CHECK(r.host_frames.samples >= 70);
  CHECK(r.host_frames.data_loading_share == 0);
  REQUIRE_FALSE(r.host_frames.frames.empty());
  CHECK(r.host_frames.frames[0].where == "/home/u/train.py:10 in log_metrics");
  CHECK(Find(r.findings, "data_loading") == nullptr);
  CHECK(Find(r.findings, "host_overhead") != nullptr);
}
