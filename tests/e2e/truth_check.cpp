// Comparing a summary.json with the truth files of a scenario run (see truth_check.h).
#include "truth_check.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "subprocess.h"

namespace sc = gpuwatch::scenario;
using nlohmann::json;

namespace gpuwatch::e2e {
namespace {

// Times: 5% or 0.5 ms, whichever is larger (issue #3).
//
// Host times of calls may also fall short by up to kUnseenPerCall per call, never exceed:
// the driver's stopwatch brackets the whole wrapper (its entry and exit, the library's
// start in the first recorded call) and its own two clock reads, and on a loaded machine
// any preemption inside those; the hook times only the real call. Measured on the 2-core
// dev VM, straggler's 40 async copies: 100-180 us short with one rank alone, 150-730 us
// with its 3 ranks (truth 1.4-3 ms), which failed the 0.5 ms floor in CI. A call during which
// the scheduler took the driver's thread away (`preempted_s`, the truth's own count of
// involuntary switches) may be short by the time away: a CI run read checkpoint_stall's four
// 2 ms copies 2.1 ms short.
constexpr double kUnseenPerCall = 10e-6;

void CheckTime(const std::string& what, double got, double want, uint64_t calls = 0, double preempted_s = 0) {
  const double tol = std::max(0.05 * want, 0.0005);
  INFO(what << ": summary " << got << " s, truth " << want << " s (" << preempted_s << " s in preempted calls), "
            << calls << " calls");
  CHECK(got <= want + tol);
  CHECK(got >= want - tol - static_cast<double>(calls) * kUnseenPerCall - preempted_s);
}

// GPU figures against the device truth: 3% (issue #4), with a 0.2 ms floor for near-zero sums.
void CheckGpu(const std::string& what, double got, double want) {
  const double tol = std::max(0.03 * want, 0.0002);
  INFO("gpu " << what << ": summary " << got << " s, device truth " << want << " s");
  CHECK(std::abs(got - want) <= tol);
}

uint64_t U(const json& j, const char* key) { return j.contains(key) ? j[key].get<uint64_t>() : 0; }
double D(const json& j, const char* key) { return j.contains(key) ? j[key].get<double>() : 0.0; }
const json& Sub(const json& j, const char* key) {
  static const json empty = json::object();
  return j.contains(key) ? j[key] : empty;
}

// What the copies of a scenario should look like when classified by the library.
struct CopyExpect {
  uint64_t pageable_count = 0, pageable_bytes = 0, blocking_count = 0;
};

void CountCopies(const sc::Scenario& s, sc::OpKind kind, CopyExpect& e) {
  for (int step = 0; step < s.steps; ++step) {
    for (const sc::Op* op : s.ops_for_step(step)) {
      if (op->kind == kind) {
        if (!op->pinned) {
          e.pageable_count++;
          e.pageable_bytes += op->bytes;
        }
        if (!op->async || !op->pinned) e.blocking_count++;
      }
      // item: a 4-byte cudaMemcpyAsync into a pageable local, which blocks the host.
      if (kind == sc::OpKind::D2H && op->kind == sc::OpKind::Item) {
        e.pageable_count++;
        e.pageable_bytes += 4;
        e.blocking_count++;
      }
    }
  }
}

}  // namespace

void CheckRank(const sc::Scenario& s, const json& rank, const json& truth, const json& device) {
  const int r = rank["rank"].get<int>();
  INFO("rank " << r);
  const json& ops = truth["ops"];
  const json& kinds = device["kinds"];
  const json& item = Sub(ops, "item");

  CHECK(rank["world_size"].get<int>() == s.ranks);
  CHECK(U(Sub(rank, "kernels"), "launches") == U(Sub(ops, "kernels"), "count"));
  // Library kernels: cuLaunchKernel from cudaGetDriverEntryPointByVersion, wrapped there.
  CHECK(U(Sub(rank, "kernels"), "driver_launches") == U(Sub(ops, "kernels_library"), "count"));

  // Copies.
  const json& h2d = Sub(Sub(rank, "memcpy"), "h2d");
  const json& d2h = Sub(Sub(rank, "memcpy"), "d2h");
  CHECK(U(h2d, "count") == U(Sub(ops, "h2d"), "count"));
  CHECK(U(h2d, "bytes") == U(Sub(ops, "h2d"), "bytes"));
  CHECK(U(d2h, "count") == U(Sub(ops, "d2h"), "count") + U(item, "count"));
  CHECK(U(d2h, "bytes") == U(Sub(ops, "d2h"), "bytes") + 4 * U(item, "count"));
  CopyExpect eh, ed;
  CountCopies(s, sc::OpKind::H2D, eh);
  CountCopies(s, sc::OpKind::D2H, ed);
  CHECK(U(h2d, "pageable_count") == eh.pageable_count);
  CHECK(U(h2d, "pageable_bytes") == eh.pageable_bytes);
  CHECK(U(h2d, "blocking_count") == eh.blocking_count);
  CHECK(U(d2h, "pageable_count") == ed.pageable_count);
  CHECK(U(d2h, "pageable_bytes") == ed.pageable_bytes);
  CHECK(U(d2h, "blocking_count") == ed.blocking_count);
  CheckTime("h2d host time", D(h2d, "total_s"), D(Sub(ops, "h2d"), "total_s"), U(h2d, "count"),
            D(Sub(ops, "h2d"), "preempted_s"));

  // Syncs. The driver ends with one cudaDeviceSynchronize outside the scenario's ops.
  const json& by_api = Sub(Sub(rank, "sync"), "by_api");
  const json& stream_sync = Sub(by_api, "cudaStreamSynchronize");
  CHECK(U(stream_sync, "count") == U(Sub(ops, "sync_stream"), "count") + U(item, "count"));
  CHECK(U(Sub(by_api, "cudaDeviceSynchronize"), "count") == U(Sub(ops, "sync_device"), "count") + 1);
  CHECK(U(Sub(by_api, "cudaEventSynchronize"), "count") == U(Sub(ops, "sync_event"), "count"));
  if (U(item, "count") == 0) {
    CheckTime("d2h host time", D(d2h, "total_s"), D(Sub(ops, "d2h"), "total_s"), U(d2h, "count"),
              D(Sub(ops, "d2h"), "preempted_s"));
    CheckTime("stream sync time", D(stream_sync, "total_s"), D(Sub(ops, "sync_stream"), "total_s"),
              U(stream_sync, "count"), D(Sub(ops, "sync_stream"), "preempted_s"));
  } else {
    // item = a blocking copy + a stream sync; the driver times them together.
    CheckTime("d2h + stream sync time", D(d2h, "total_s") + D(stream_sync, "total_s"),
              D(Sub(ops, "d2h"), "total_s") + D(item, "total_s") + D(Sub(ops, "sync_stream"), "total_s"),
              U(d2h, "count") + U(stream_sync, "count"),
              D(Sub(ops, "d2h"), "preempted_s") + D(item, "preempted_s") + D(Sub(ops, "sync_stream"), "preempted_s"));
  }
  if (U(Sub(ops, "sync_event"), "count") > 0) {
    CheckTime("event sync time", D(Sub(by_api, "cudaEventSynchronize"), "total_s"),
              D(Sub(ops, "sync_event"), "total_s"), U(Sub(ops, "sync_event"), "count"),
              D(Sub(ops, "sync_event"), "preempted_s"));
  }

  // Collectives: counts and bytes from the driver, GPU time from the device truth.
  for (const char* op : {"allreduce", "allgather", "reducescatter", "broadcast", "send", "recv"}) {
    INFO(op);
    const json& got = Sub(Sub(rank, "collectives"), op);
    CHECK(U(got, "count") == U(Sub(ops, op), "count"));
    CHECK(U(got, "bytes") == U(Sub(ops, op), "bytes"));
    if (U(Sub(ops, op), "count") > 0) CheckTime("collective GPU time", D(got, "total_s"), D(Sub(kinds, op), "device_s"));
  }
  CHECK(U(rank, "dropped_total") == 0);

  // The GPU timeline from (simulated) CUPTI against the device model's own account: 3%.
  const json& gpu = Sub(rank, "gpu");
  CHECK(gpu.value("source", "") == "cupti");
  CheckGpu("busy", D(gpu, "busy_s"), D(device, "busy_s"));
  CheckGpu("gaps", D(Sub(gpu, "gaps"), "total_s"), D(Sub(device, "gaps"), "total_s"));
  CHECK(U(Sub(gpu, "gaps"), "count") == U(Sub(device, "gaps"), "count"));
  const json& kernels = Sub(gpu, "kernels");
  CHECK(U(kernels, "count") == U(Sub(kinds, "kernel"), "count"));
  CheckGpu("kernel time", D(kernels, "total_s"), D(Sub(kinds, "kernel"), "device_s"));

  // CUDA graphs: launches and captures from the driver, their device work from the device
  // truth, which counts graph work apart (exactly; time 3%).
  const json& graphs = Sub(rank, "graphs");
  const json& dev_graphs = Sub(device, "graphs");
  uint64_t captured = 0;
  for (const sc::Op* op : sc::graph_ops(s)) captured += op->count;  // each graph's launches, captured once
  CHECK(U(graphs, "launches") == U(Sub(ops, "graph"), "count"));
  CHECK(U(graphs, "captured_calls") == captured);
  CHECK(U(graphs, "kernels") == U(Sub(ops, "graph_kernels"), "count"));
  CHECK(U(graphs, "kernels") == U(dev_graphs, "kernels"));
  CHECK(U(graphs, "device_launches") == U(dev_graphs, "launches"));
  CHECK(U(kernels, "in_graphs") == U(dev_graphs, "kernels"));
  CheckGpu("graph work time", D(graphs, "device_s"), D(dev_graphs, "device_s"));
  uint64_t per_graph_kernels = 0;
  for (const json& g : Sub(graphs, "per_graph")) per_graph_kernels += U(g, "kernels");
  CHECK(per_graph_kernels == U(graphs, "kernels"));

  // Memsets: the hooks' calls (host) and the device's.
  const json& memset = Sub(rank, "memset");
  CHECK(U(memset, "count") == U(Sub(ops, "memset"), "count"));
  CHECK(U(memset, "bytes") == U(Sub(ops, "memset"), "bytes"));
  CHECK(U(Sub(kinds, "memset"), "count") == U(Sub(ops, "memset"), "count"));
}

void CheckSummaryAgainstTruth(const sc::Scenario& s, const json& summary, const std::string& truth) {
  CHECK(summary["schema"] == "gpuwatch.summary.v1");
  REQUIRE(summary["ranks"].size() == static_cast<size_t>(s.ranks));
  for (const json& rank : summary["ranks"]) {
    const int r = rank["rank"].get<int>();
    const json t = json::parse(ReadFile(truth + "/truth-rank-" + std::to_string(r) + ".json"));
    const json d = json::parse(ReadFile(truth + "/device-rank-" + std::to_string(r) + ".json"));
    CheckRank(s, rank, t, d);
  }
}

}  // namespace gpuwatch::e2e
