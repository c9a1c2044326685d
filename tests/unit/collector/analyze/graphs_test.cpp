// CUDA graphs through the interpret stage: graph launches and captured calls from the hooks,
// graph work from CUPTI (graph ids, the launch's correlation id), into GraphFigures, the
// launch and copy figures that must leave captured calls out, the kernel table, and the
// launch-bound rule that must not count graph kernels as launched one by one.
#include <catch2/catch.hpp>

#include "analyze/findings.h"
#include "analyze/rank_model.h"
#include "fixtures.h"
#include "report/figures_json.h"

using namespace gwtest;

namespace {

constexpr uint64_t kUs = 1000;
constexpr uint64_t kMs = 1000 * kUs;

col::RankResult Run(const std::vector<wire::Batch>& batches) {
  col::RankModel m;
  for (const auto& b : batches) m.OnBatch(b);
  return m.Result();
}

wire::Activity* Api(wire::Batch* b, uint32_t corr, uint64_t start, uint64_t end) {
  auto* a = Work(b, wire::ACTIVITY_API, start, end, corr, 0);
  a->set_api_domain(1);
  return a;
}

// `launches` replays of a graph of `n` kernels of `us` µs, one launch call each (20 µs),
// after its capture (n captured launches and a captured copy).
wire::Batch GraphRun(uint32_t graph_id, int launches, int n, uint64_t us, uint32_t first_corr = 100) {
  wire::Batch b;
  Add(&b, wire::CUDA_STREAM_BEGIN_CAPTURE, 1 * kUs, 1 * kUs);
  for (int i = 0; i < n; ++i) Add(&b, wire::CUDA_LAUNCH_KERNEL, 2 * kUs + i, 1)->set_flags(wire::FLAG_IN_CAPTURE);
  Copy(&b, wire::CUDA_MEMCPY_ASYNC, wire::COPY_H2D, 4096, 3 * kUs, 1, wire::FLAG_IN_CAPTURE);
  Add(&b, wire::CUDA_STREAM_END_CAPTURE, 4 * kUs, 1 * kUs);
  Add(&b, wire::CUDA_GRAPH_INSTANTIATE, 5 * kUs, 10 * kUs);
  uint64_t t = 1 * kMs;
  for (int l = 0; l < launches; ++l) {
    const uint32_t corr = first_corr + l;
    Add(&b, wire::CUDA_GRAPH_LAUNCH, t, 20 * kUs);
    Api(&b, corr, t, t + 20 * kUs);
    uint64_t s = t + 25 * kUs;
    for (int k = 0; k < n; ++k, s += us * kUs) {
      auto* w = Work(&b, wire::ACTIVITY_KERNEL, s, s + us * kUs, corr);
      w->set_name_id(1);
      w->set_graph_id(graph_id);
      w->set_graph_node_id((uint64_t{graph_id} << 32) | (k + 1));
    }
    t = s + 100 * kUs;
  }
  return b;
}

}  // namespace

TEST_CASE("collector: graph launches, their kernels and captured calls are counted apart") {
  const col::RankResult r = Run({GraphRun(7, 5, 40, 3)});
  const col::GraphFigures& g = r.graphs;
  CHECK(g.launches == 5);
  CHECK(g.launch_ns == 5 * 20 * kUs);
  CHECK(g.captures == 1);
  CHECK(g.instantiations == 1);
  CHECK(g.captured_calls == 41);  // 40 launches + 1 copy, recorded into the graph
  CHECK(g.device.kernels == 200);
  CHECK(g.device.ops == 200);
  CHECK(g.device.launches == 5);
  CHECK(g.device.device_ns == 200 * 3 * kUs);
  REQUIRE(g.by_graph.count(7));
  CHECK(g.by_graph.at(7).launches == 5);
  // Captured calls ran nothing: no launch, no copy.
  CHECK(r.launches.launches == 0);
  CHECK(r.copies.dir[0].calls.count == 0);
  // The device's kernels: all of them in graphs, none counted as launched one by one.
  CHECK(r.gpu.kernel_count == 200);
  CHECK(r.gpu.graph_kernels == 200);
  CHECK(r.gpu.kernel_with_api == 0);
  CHECK(r.gpu.short_fraction() == 0.0);
  const nlohmann::json j = col::GraphsJson(g);
  CHECK(j["per_graph"][0]["graph_id"] == 7);
  CHECK(j["per_graph"][0]["kernels"] == 200);
  const nlohmann::json gpu = col::GpuJson(r.gpu);
  CHECK(gpu["kernels"]["in_graphs"] == 200);
  CHECK(gpu["kernels"]["top"][0]["in_graphs"] == 200);
}

TEST_CASE("collector: launch_bound fires for short kernels launched one by one, not for the same in a graph") {
  // Eager: 200 kernels of 3 µs, each after a 20 µs launch call that ends before it starts.
  wire::Batch eager;
  uint64_t t = 1 * kMs;
  for (uint32_t i = 0; i < 200; ++i, t += 25 * kUs) {
    Add(&eager, wire::CUDA_LAUNCH_KERNEL, t, 20 * kUs)->set_name_id(1);
    Api(&eager, 1000 + i, t, t + 20 * kUs);
    Work(&eager, wire::ACTIVITY_KERNEL, t + 21 * kUs, t + 24 * kUs, 1000 + i)->set_name_id(1);
  }
  const col::RankResult e = Run({eager});
  CHECK(e.gpu.short_fraction() == 1.0);
  bool eager_fires = false;
  for (const auto& f : e.findings) eager_fires |= f.id == "launch_bound";
  CHECK(eager_fires);

  const col::RankResult g = Run({GraphRun(3, 5, 40, 3)});
  for (const auto& f : g.findings) CHECK(f.id != "launch_bound");
}

TEST_CASE("collector: graph ids are per graph, launches counted per graph on the device") {
  wire::Batch b = GraphRun(1, 2, 3, 10, 100);
  wire::Batch c = GraphRun(2, 3, 2, 10, 200);
  const col::RankResult r = Run({b, c});
  CHECK(r.graphs.launches == 5);
  REQUIRE(r.graphs.by_graph.size() == 2);
  CHECK(r.graphs.by_graph.at(1).launches == 2);
  CHECK(r.graphs.by_graph.at(1).kernels == 6);
  CHECK(r.graphs.by_graph.at(2).launches == 3);
  CHECK(r.graphs.by_graph.at(2).kernels == 6);
  col::GraphFigures merged = r.graphs;
  merged.Merge(r.graphs);
  CHECK(merged.launches == 10);
  CHECK(merged.by_graph.at(2).kernels == 12);
}
