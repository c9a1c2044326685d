// Scenario format v1: parsing, validation and the expected totals of a run.
//
// This is plain C++ (no CUDA) so that the driver's parent process, the rank processes, the
// unit tests and downstream end-to-end tests all share one definition of what a scenario
// means. docs/scenarios.md is the user-facing description of the format.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rank_layout.h"

namespace gpuwatch::scenario {

enum class OpKind { Host, H2D, D2H, Kernels, Item, Sync, AllReduce, AllGather, ReduceScatter, Broadcast, Graph, Memset,
                    Alloc, Send, Recv };
enum class SyncWhat { Stream, Device, Event };
// How `kernels` are launched: through the runtime (<<<>>>, seen by cudaLaunchKernel hooks) or
// as a library such as cuBLAS does (driver cuLaunchKernel, invisible to runtime hooks).
// How kernels are launched: the runtime's <<<>>>; the driver's cuLaunchKernel from
// cudaGetDriverEntryPointByVersion (cuBLAS); cuLaunchKernelEx from libcuda.so.1 by dlsym (Triton).
enum class Via { Runtime, Library, Triton };
// What a `host` op does while its time passes (host_work.h).
enum class HostWait { Sleep, Cpu, Read };

// One entry of "step" or of an "every" block, with defaults applied.
struct Op {
  OpKind kind = OpKind::Host;
  std::string where;     // "step[2]" or "every[0].ops[1]": names the op in error messages
  double ms = 0;         // host
  HostWait wait = HostWait::Sleep;  // host
  double read_mbps = 100;  // host with wait = read
  std::uint64_t bytes = 0;  // h2d, d2h, memset, collectives (per rank), alloc
  bool pinned = true;    // h2d, d2h
  bool async = true;     // h2d, d2h
  std::uint64_t count = 0;  // kernels; graph: its kernels (the "kernels" key)
  double us = 0;         // kernels, graph
  std::uint64_t replays = 0;  // graph: launches per step (captured once, at setup)
  std::string name;      // kernels: NVTX range name (optional)
  Via via = Via::Runtime;  // kernels
  std::uint64_t blocks = 0;  // kernels: the grid's blocks; 0 = the device's SM count
  bool check = false;    // kernels: cudaGetLastError after each launch, as PyTorch checks each one
  bool side = false;     // kernels ("stream": "side"): on a side stream the compute stream then waits for
  SyncWhat what = SyncWhat::Stream;  // sync
  CommGroup group = CommGroup::World;  // collectives: the communicator ("group"); send/recv: Pp
  bool overlap = false;  // collectives: run beside the next ops instead of being waited for at once
};

struct Every {
  int period = 1;
  std::vector<Op> ops;
};

// Multipliers for one rank's host and kernel times (1.0 = as written).
struct RankScale {
  double host = 1.0;
  double kernels = 1.0;
};

struct Scenario {
  std::string source;  // file name used as the prefix of error messages
  std::string name;
  std::string description;
  int ranks = 1;
  int steps = 1;
  bool nvtx = true;
  std::map<std::string, double> gpu;  // simulator device keys, in file order irrelevant
  std::map<std::string, std::string> gpu_text;  // device keys whose values are not one number (device_keys.h)
  std::vector<Op> step;
  std::vector<Every> every;
  std::map<int, RankScale> rank_scale;
  GroupSizes groups;  // "groups": {"tp": T, "pp": P}; DP is ranks / (T x P)

  RankLayout layout() const { return RankLayout(ranks, groups); }
  RankScale scale_for(int rank) const;
  // The ops a rank plays in step `s` (0-based): the step ops, then every "every" block
  // whose period divides in (s % period == period - 1), in file order.
  std::vector<const Op*> ops_for_step(int s) const;
};

// Thrown for any invalid scenario; what() is one line: "FILE: KEY.PATH: problem".
class ScenarioError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

Scenario parse_scenario(const nlohmann::json& doc, const std::string& source);
Scenario parse_scenario_text(const std::string& text, const std::string& source);
Scenario load_scenario(const std::string& path);

// The scenario op name ("host", "allreduce", ...) and the simulator's device kind for it.
const char* op_name(OpKind k);
bool is_collective(OpKind k);
// Pipeline point-to-point ops (send to the next stage, recv from the previous one).
bool is_p2p(OpKind k);
// Whether `rank` plays the send/recv `op` at all: the first stage receives from no one, the
// last sends to no one. Always true for other ops.
bool plays(const Scenario& sc, const Op& op, int rank);
// Ranks in the communicator `op` runs on (its group's size).
int group_size(const Scenario& sc, const Op& op);

// Bytes of one collective as nccl-tests counts them (S): AllReduce/Broadcast S = count x 4,
// AllGather/ReduceScatter S = ranks x per-rank bytes, `ranks` being the communicator's size;
// send/recv S = bytes.
std::uint64_t collective_bytes(OpKind k, std::uint64_t per_rank_bytes, int ranks);

// Bytes of device memory a rank needs to play the scenario (largest single use).
std::uint64_t device_buffer_bytes(const Scenario& sc);
std::uint64_t host_buffer_bytes(const Scenario& sc, bool pinned);

// "key=value,..." for SIMGPU_CONFIG from the scenario's "gpu" object ("" when empty).
std::string simgpu_config(const Scenario& sc);

// The most device memory a rank holds: the setup's buffer plus every `alloc` op (kept to the end).
std::uint64_t expected_memory_peak(const Scenario& sc);

struct Totals {
  std::uint64_t count = 0;
  std::uint64_t bytes = 0;
  double seconds = 0;  // nominal time the scenario asks for (see each function); 0 if none
};

// What truth-rank-R.json's "ops" must contain for `rank` (count and bytes exactly).
// seconds: host = ms x scale summed; kernels, kernels_library and graph_kernels = us x
// scale summed (device time, not the launch-call time the truth file reports); 0 for the
// others. Keys: host, h2d, d2h, memset, kernels (via runtime), kernels_library (via
// library), graph (graph launches), graph_kernels (kernels those launches ran), item,
// sync, sync_stream, sync_device, sync_event, and each collective; only keys with count >
// 0 are present.
std::map<std::string, Totals> expected_truth_ops(const Scenario& sc, int rank);

// What the simulator's device-rank-R.json "kinds" must contain for `rank`: kernel (count,
// device seconds; both launch paths and graph replays), h2d, d2h (item's 4-byte copies included), memset, and
// each collective with bytes S. Only kinds with count > 0 are present.
std::map<std::string, Totals> expected_device_kinds(const Scenario& sc, int rank);

// "0,2": a communicator's members as world ranks, the key of the device file's "comms".
std::string members_label(const std::vector<int>& members);
// What the device file's "comms" must count for `rank` (count and bytes exactly): its
// collectives and send/recv by the members of the communicator each ran on. Communicators
// with the same members (a DP group as large as the world) share one key.
std::map<std::string, Totals> expected_device_comms(const Scenario& sc, int rank);

// What the device file's "graphs" must say: launches and the kernels they ran (count,
// device seconds).
struct GraphTotals {
  std::uint64_t launches = 0, kernels = 0;
  double kernel_seconds = 0;
};
GraphTotals expected_graphs(const Scenario& sc, int rank);

// Every op written in the scenario once, in file order (step, then every block).
std::vector<const Op*> all_ops(const Scenario& sc);
// Kernels (the kernels ops' and every graph's) by their grid's block count: `blocks`, else
// the gpu's sm_count [132].
std::map<std::uint64_t, std::uint64_t> expected_kernel_blocks(const Scenario& sc);

// The `graph` ops of the scenario, in file order (step, then every block): each is captured
// once at setup.
std::vector<const Op*> graph_ops(const Scenario& sc);

}  // namespace gpuwatch::scenario
