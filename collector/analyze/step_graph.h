// A rank's steps as a dependency graph (issue 52): every interval the step is made of is a
// node (host work between calls, the calls, a sync's wait, each kernel, copy and
// collective), every reason one interval could not start earlier is an edge (the thread's
// order, a launch, the stream's order, an event waited on, the work a sync waited for).
//
// Replaying it (each node as soon as its inputs allow) gives the steps' length; the nodes
// whose inputs bound others, followed back from the last to end, are the critical path.
// A fix is the same replay with some nodes shorter or some edges gone (analyze/what_if.h).
// The graph holds a few consecutive steps that CUPTI recorded whole (step_graphs.h builds
// it from the event stream); nodes are in measured start order, and every edge points from
// an earlier node to a later one, so one pass replays it.
#pragma once
#include <cstdint>
#include <functional>
#include <tuple>
#include <vector>

#include "analyze/critical_path.h"

namespace gpuwatch::collector {

enum class NodeKind : uint8_t {
  kHostGap,   // the host between two hooked calls on a thread (or from the steps' start)
  kCall,      // a hooked call's own time (a launch, an enqueue, a blocking call's enqueue)
  kSyncWait,  // a blocking call after its enqueue: until the work it waited for ended, plus its return
  kKernel,
  kCopy,      // copies and memsets
  kComm,      // an NCCL kernel (collective, send, recv)
};

struct GraphNode {
  uint64_t start_ns = 0, end_ns = 0;  // measured
  // Earliest start that no node of the graph explains (work of an earlier step still on its
  // stream; the steps' start for a thread's first gap): kept by every replay.
  uint64_t release_ns = 0;
  uint32_t first_in = 0, n_in = 0;  // its inputs: StepGraph::edges[first_in, first_in + n_in)
  NodeKind kind = NodeKind::kHostGap;
  // kSyncWait: a small blocking copy (.item()) or a polling loop; kCall/kSyncWait: the
  // call's sync kind (SyncKind) or -1.
  int8_t sync_kind = -1;
  bool last_sync = false;  // kSyncWait: the step's last blocking call on its thread
  bool pageable = false;   // kCopy: from pageable host memory
  bool enqueue = false;    // kCall: puts work on a stream (a launch, copy, memset, collective, event)
  bool launch = false;     // kCall: a kernel launch (not a copy, a collective, a graph launch)
  bool collective = false; // kCall: an NCCL call
  uint32_t lane = 0;       // host nodes: the thread; device nodes: the stream
  uint32_t step = 0;       // which of the graph's steps (0-based)
  uint64_t bytes = 0;      // copies; collectives' S (their kernel and call)
  int32_t signature = -1;  // kComm: index of its collective's kind (StepGraph::comm_min_ns)
  int32_t join = -1;       // kComm: its identity across ranks (StepGraph::joins); -1: none known
  uint64_t dur() const { return end_ns - start_ns; }
  bool host() const { return kind == NodeKind::kHostGap || kind == NodeKind::kCall || kind == NodeKind::kSyncWait; }
};

enum class EdgeKind : uint8_t {
  kThread,  // the host thread's order
  kLaunch,  // a call → the work it launched (lag: the launch latency)
  kStream,  // the stream's order
  kEvent,   // cudaEventRecord's work → the first work after cudaStreamWaitEvent
  kSync,    // device work → the blocking call that waited for it
};

struct GraphEdge {
  uint32_t from = 0;
  EdgeKind kind = EdgeKind::kThread;
  int64_t lag_ns = 0;  // the input's end + lag: the earliest start it allows
};

// A comm kernel's identity across ranks (analyze/job_graph.h joins the ranks' graphs at
// it): a collective is its communicator's seq-th call on every member; a send is the n-th
// from one member to another on the communicator, met by the receiver's n-th recv from it.
struct CommKey {
  uint64_t comm = 0;           // the communicator's hash, the same on every rank
  uint64_t seq = 0;            // collectives: the call's sequence number in it; send/recv: n
  int32_t from = -1, to = -1;  // send/recv: the sender's and the receiver's index in it
  int32_t members = 0;         // the ranks that meet there: the communicator's size, 2 for send/recv
  bool operator<(const CommKey& o) const {
    return std::tie(comm, seq, from, to) < std::tie(o.comm, o.seq, o.from, o.to);
  }
};

struct StepGraph {
  uint64_t start_ns = 0;  // the first step's start
  uint32_t steps = 0;
  std::vector<GraphNode> nodes;
  std::vector<GraphEdge> edges;
  // Per collective kind (communicator, call, size): its fastest NCCL kernel in this graph;
  // the rest of a kernel's time waited for the communicator's last rank.
  std::vector<uint64_t> comm_min_ns;
  std::vector<CommKey> joins;  // GraphNode::join's
};

// What a replay changes: a node's duration, and whether an input still holds.
struct ReplayFix {
  std::function<uint64_t(const StepGraph&, uint32_t node)> duration;  // null: measured
  std::function<bool(const StepGraph&, uint32_t node, const GraphEdge&)> keeps;  // null: all
};

struct PathReplay {
  // The first step's done → the last step's done (one step: its start → its done), over
  // `steps` steps.
  uint64_t span_ns = 0;
  uint32_t steps = 0;
  double part_ns[kPathParts] = {};     // the critical path by part; sums to span_ns
  std::vector<PathStreamTime> streams;  // kPathGpuCompute by stream (ns in `ms`, not yet per step)
};

// The measured steps' span, as a replay counts it (first step's done → last step's done).
uint64_t MeasuredSpan(const StepGraph& g);
// Each step's done (its nodes' latest end, and no earlier than the step before's) for the
// node ends `end`; the span from the first one's done (`from_out`) to the last one's, over
// `steps_out` steps (one step: from the graph's start).
uint64_t StepsSpan(const StepGraph& g, const std::vector<uint64_t>& end, uint64_t* from_out, uint32_t* steps_out,
                   std::vector<uint64_t>* done_out = nullptr);

// The PathPart a node's time is on a path (a comm node's: kPathComm, its wait aside).
int PathPartOf(const GraphNode& n);

// A comm kernel's time split: the kernel's own transfer and the wait for peers before it.
uint64_t CommTransferNs(const StepGraph& g, uint32_t node);

// A node the critical path went through, and the kind of the input that bound its start
// (an EdgeKind; -1: its release).
struct PathNode {
  uint32_t node = 0;
  int8_t via = -1;
};

// Replays the graph (nodes in order, each at the latest of its release and its kept inputs),
// then walks the critical path back from the node that ends last. `alone`: NCCL kernels take
// no time (the rank's own pace; the job adds the communicators' transfer, what_if.h).
// `path`: when given, the path's nodes, last first.
PathReplay ReplayGraph(const StepGraph& g, const ReplayFix& fix = {}, bool alone = false,
                       std::vector<PathNode>* path = nullptr);

}  // namespace gpuwatch::collector
