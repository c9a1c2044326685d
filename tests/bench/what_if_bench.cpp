// What the steps' dependency graphs and their what-ifs (analyze/step_graphs.h, what_if.h)
// cost beside the rest of a rank's analysis. R ranks of S steps, each step E events (half
// kernel launches, half their kernels, CUPTI recording every step), on one thread's CPU clock:
//   model: the whole RankModel played (interpretation, every analysis, the graphs, the
//   what-ifs); then the interpretation again with two timed subscribers side by side,
//   StepGraphs and one that does nothing (the timing's own cost, subtracted), then the
//   what-ifs on the graphs; then the job's: every rank's graphs joined at the all-reduce that
//   closes each step (analyze/job_graph.h) and replayed with the job's what-ifs
//   (ModelJobFixes, a straggler among its findings). Share = (graphs - empty + what-ifs +
//   job) / model.
// The collector also decodes, journals and traces every record, so the share of its CPU is
// smaller than this one.
//
//   what_if_bench [RANKS] [STEPS] [EVENTS_PER_STEP]     (defaults: 8 1000 2000)
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "analyze/rank_model.h"
#include "analyze/step_graphs.h"
#include "analyze/job_result.h"
#include "analyze/what_if.h"
#include "interpret/rank_interpreter.h"

namespace w = gpuwatch::wire;
namespace dg = gpuwatch::collector;

namespace {

constexpr uint64_t kUs = 1000;

double CpuS() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// One step a batch: an NVTX step range, `launches` launches of 5 us kernels 10 us apart,
// an all-reduce on a communicator of `ranks` (as rank `rank`), then a stream sync.
std::vector<w::Batch> Steps(int steps, int events, int ranks, int rank) {
  std::vector<w::Batch> out;
  const int launches = events / 2;
  uint64_t t = 1'000'000'000, corr = 1;
  for (int s = 0; s < steps; ++s) {
    w::Batch b;
    if (s == 0) {
      b.set_gpu_source(w::GPU_SOURCE_CUPTI);
      auto* n = b.add_kernel_names();
      n->set_id(1);
      n->set_name("train_step");
      n = b.add_kernel_names();
      n->set_id(2);
      n->set_name("op");
      n = b.add_kernel_names();
      n->set_id(3);
      n->set_name("ncclDevKernel_AllReduce_Sum_f32_RING_LL");
      auto* c = b.add_communicators();
      c->set_comm_id(1);
      c->set_nranks(ranks);
      c->set_rank(rank);
      c->set_unique_hash(0xC0FFEE);
      c->set_origin(w::Communicator::ORIGIN_INIT_RANK);
    }
    const uint64_t start = t;
    t += 100 * kUs;
    for (int k = 0; k < launches; ++k, t += 10 * kUs, ++corr) {
      auto* e = b.add_events();
      e->set_api(w::CUDA_LAUNCH_KERNEL);
      e->set_t_ns(t);
      e->set_dur_ns(4 * kUs);
      e->set_name_id(2);
      auto* a = b.add_activities();
      a->set_kind(w::ACTIVITY_API);
      a->set_correlation_id(corr);
      a->set_start_ns(t + 100);
      a->set_end_ns(t + 3 * kUs);
      auto* kr = b.add_activities();
      kr->set_kind(w::ACTIVITY_KERNEL);
      kr->set_correlation_id(corr);
      kr->set_start_ns(t + 6 * kUs);
      kr->set_end_ns(t + 11 * kUs);
      kr->set_name_id(2);
    }
    {  // the all-reduce, 100 us after the last kernel's launch
      auto* e = b.add_events();
      e->set_api(w::NCCL_ALL_REDUCE);
      e->set_t_ns(t);
      e->set_dur_ns(4 * kUs);
      e->set_comm_id(1);
      e->set_seq(static_cast<uint64_t>(s));
      e->set_bytes(1 << 20);
      auto* a = b.add_activities();
      a->set_kind(w::ACTIVITY_API);
      a->set_correlation_id(corr);
      a->set_start_ns(t + 100);
      a->set_end_ns(t + 3 * kUs);
      auto* kr = b.add_activities();
      kr->set_kind(w::ACTIVITY_KERNEL);
      kr->set_correlation_id(corr);
      kr->set_start_ns(t + 6 * kUs);
      kr->set_end_ns(t + 106 * kUs);
      kr->set_name_id(3);
      ++corr;
      t += 110 * kUs;
    }
    auto* sync = b.add_events();
    sync->set_api(w::CUDA_STREAM_SYNCHRONIZE);
    sync->set_t_ns(t);
    sync->set_dur_ns(10 * kUs);
    t += 20 * kUs;
    auto* r = b.add_events();
    r->set_api(w::NVTX_RANGE);
    r->set_t_ns(start);
    r->set_dur_ns(t - start);
    r->set_name_id(1);
    b.set_settled_ns(t);
    out.push_back(std::move(b));
  }
  return out;
}

// Forwards to `inner`, adding the CPU time spent there.
struct Timed final : dg::EventSink {
  dg::EventSink* inner;
  double s = 0;
  explicit Timed(dg::EventSink* i) : inner(i) {}
  template <typename F>
  void Time(F&& f) {
    const double t = CpuS();
    f();
    s += CpuS() - t;
  }
  void OnHostCall(const dg::HostCall& c) override { Time([&] { inner->OnHostCall(c); }); }
  void OnDeviceWork(const dg::DeviceWork& w) override { Time([&] { inner->OnDeviceWork(w); }); }
  void OnStep(const dg::StepMark& m) override { Time([&] { inner->OnStep(m); }); }
  void OnStepsReset() override { Time([&] { inner->OnStepsReset(); }); }
  void OnDeviceSettled(uint64_t ns) override { Time([&] { inner->OnDeviceSettled(ns); }); }
};

template <typename Sink>
double Play(const std::vector<w::Batch>& batches, Sink& sink, int rank) {
  const double t0 = CpuS();
  w::Hello h;
  h.set_rank(rank);
  sink.OnHello(h);
  for (const w::Batch& b : batches) sink.OnBatch(b);
  sink.Flush();
  return CpuS() - t0;
}

}  // namespace

int main(int argc, char** argv) {
  const int ranks = argc > 1 ? atoi(argv[1]) : 8;
  const int steps = argc > 2 ? atoi(argv[2]) : 1000;
  const int events = argc > 3 ? atoi(argv[3]) : 2000;
  double model_s = 0, empty_s = 0, graphs_s = 0, what_if_s = 0;
  size_t graphs = 0;
  std::vector<dg::RankResult> results;
  for (int r = 0; r < ranks; ++r) {
    const std::vector<w::Batch> batches = Steps(steps, events, ranks, r);
    dg::RankModel model(dg::DeviceSweep::Limits{});
    const double t0 = CpuS();
    Play(batches, model, r);
    dg::RankResult result = model.Result();  // the figures, findings, graphs' replays
    model_s += CpuS() - t0;
    dg::RankInterpreter interp(dg::DeviceSweep::Limits{});
    dg::StepGraphs sg;
    dg::EventSink nothing;
    Timed timed_sg(&sg), timed_nothing(&nothing);
    interp.Subscribe(&timed_nothing);
    interp.Subscribe(&timed_sg);
    Play(batches, interp, r);
    graphs_s += timed_sg.s;
    empty_s += timed_nothing.s;
    const double t1 = CpuS();
    const dg::StepGraphList list = sg.Graphs();
    dg::ModelRankFixes(list, result);
    what_if_s += CpuS() - t1;
    graphs = list.size();
    result.rank = r;
    results.push_back(std::move(result));
  }
  // The job's: the ranks' graphs joined, the joined path and a straggler's fix replayed.
  dg::JobResult job;
  job.ranks = dg::RankList(results);
  job.steps_median_s = results[0].critical_path.step_ms * 1e-3;
  dg::Finding straggler;
  straggler.id = "straggler";
  straggler.evidence["rank"] = ranks - 1;
  job.findings.push_back(straggler);
  const double t2 = CpuS();
  dg::ModelJobFixes(job);
  const double job_s = CpuS() - t2;
  const bool joined = !job.critical_path_ranks.empty();
  const double cost = graphs_s - empty_s + what_if_s + job_s;
  std::printf("{\"ranks\": %d, \"steps\": %d, \"events_per_step\": %d, \"graphs_per_rank\": %zu, "
              "\"model_cpu_s\": %.3f, \"graphs_cpu_s\": %.3f, \"timing_cpu_s\": %.3f, \"what_if_cpu_s\": %.3f, "
              "\"job_joined\": %s, \"job_what_if_cpu_s\": %.3f, \"share_of_model\": %.4f}\n",
              ranks, steps, events, graphs, model_s, graphs_s - empty_s, empty_s, what_if_s, joined ? "true" : "false",
              job_s, cost / model_s);
  return 0;
}
