// See step_graph_builder.h.
#include "analyze/step_graph_builder.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <tuple>
#include <unordered_map>

#include "common/median.h"

namespace gpuwatch::collector {

namespace {

constexpr uint64_t kSpanSlackNs = 2000;   // the hooks' span holds CUPTI's within this
constexpr uint64_t kLaunchBoundNs = 1000;  // a work whose stream was free this long before it started waited for its launch
constexpr size_t kContainScan = 64;        // calls looked back at for a work's launching call
constexpr uint64_t kDefaultEnqueueNs = 5000;

struct TmpEdge {
  uint32_t from, to;
  EdgeKind kind;
  int64_t lag;
};

// A call of the steps, on its thread.
struct StepCall {
  const HostCall* c;
  uint32_t enq = UINT32_MAX;   // its enqueue node (kCall)
  uint32_t wait = UINT32_MAX;  // its wait node (kSyncWait) when it blocks the host
  int32_t own_work = -1;       // a blocking copy's work (index into the works' nodes)
};

bool Blocks(const HostCall& c) { return c.blocks_host || c.sync_kind != kNotSync; }
bool PutsWork(const HostCall& c) {
  return EnqueuesWork(c.api) || IsCollective(c.api) || c.api == wire::CUDA_EVENT_RECORD ||
         c.api == wire::CUDA_STREAM_WAIT_EVENT || c.api == wire::CUDA_LAUNCH_HOST_FUNC;
}
bool InChain(const HostCall& c) { return c.api != wire::NVTX_RANGE && !c.captured; }

class Builder {
 public:
  explicit Builder(const GraphInput& in) : in_(in) {}

  StepGraph Build() {
    if (in_.steps.empty()) return {};
    t0_ = in_.steps.front().start_ns;
    t1_ = in_.steps.back().end_ns;
    g_.start_ns = t0_;
    g_.steps = static_cast<uint32_t>(in_.steps.size());
    Host();
    if (calls_.empty()) return {};
    Device();
    Syncs();
    return Finish();
  }

 private:
  uint32_t StepOf(uint64_t t) const {
    auto it = std::upper_bound(in_.steps.begin(), in_.steps.end(), t,
                               [](uint64_t v, const StepMark& s) { return v < s.start_ns; });
    return it == in_.steps.begin() ? 0 : static_cast<uint32_t>(it - in_.steps.begin() - 1);
  }
  uint32_t Add(GraphNode n) {
    nodes_.push_back(n);
    return static_cast<uint32_t>(nodes_.size() - 1);
  }
  GraphNode HostNode(NodeKind k, uint64_t s, uint64_t e, uint32_t tid) const {
    GraphNode n;
    n.kind = k;
    n.start_ns = s;
    n.end_ns = std::max(s, e);
    n.lane = tid;
    n.step = StepOf(s);
    return n;
  }

  // Each thread's calls in order, the host's time between them, blocking calls split.
  void Host() {
    std::vector<uint64_t> enqueue_ns;
    for (const HostCall& c : in_.calls)
      if (c.t_ns >= t0_ && c.t_ns < t1_ && InChain(c) && PutsWork(c) && !Blocks(c)) enqueue_ns.push_back(c.dur_ns);
    const uint64_t enqueue = enqueue_ns.empty() ? kDefaultEnqueueNs : MiddleOf(std::move(enqueue_ns));
    top_of_.assign(in_.calls.size(), -1);
    // The thread that closed the last step (its NVTX range), else the busiest: its host time
    // runs to the steps' end.
    std::unordered_map<uint32_t, size_t> per_thread;
    const HostCall* step_range = nullptr;
    for (const HostCall& c : in_.calls) {
      if (c.api == wire::NVTX_RANGE && c.end_ns() == t1_) step_range = &c;
      if (c.t_ns >= t0_ && c.t_ns < t1_ && InChain(c)) ++per_thread[c.tid];
    }
    uint32_t step_tid = step_range ? step_range->tid : 0;
    if (!step_range && !per_thread.empty())
      step_tid = std::max_element(per_thread.begin(), per_thread.end(),
                                  [](const auto& a, const auto& b) { return a.second < b.second; })->first;

    struct Thread {
      uint64_t end;
      uint32_t last = UINT32_MAX;
      int32_t top = -1;  // its current top-level call (index into calls_)
    };
    std::unordered_map<uint32_t, Thread> threads;
    for (const HostCall& c : in_.calls) {
      if (c.t_ns < t0_ || c.t_ns >= t1_ || !InChain(c)) continue;
      auto [it, fresh] = threads.try_emplace(c.tid, Thread{t0_});
      Thread& th = it->second;
      const size_t pos = static_cast<size_t>(&c - in_.calls.data());
      if (!fresh && c.t_ns < th.end) {  // nested in the thread's previous call: its time is that call's
        top_of_[pos] = th.top;
        continue;
      }
      if (c.t_ns > th.end) th.last = Gap(th.end, c.t_ns, c.tid, th.last);
      StepCall sc{&c};
      const bool blocks = Blocks(c);
      const uint64_t enq = !blocks ? c.dur_ns : (EnqueuesWork(c.api) ? std::min(c.dur_ns, enqueue) : 0);
      GraphNode call = HostNode(NodeKind::kCall, c.t_ns, c.t_ns + enq, c.tid);
      call.enqueue = PutsWork(c);
      call.launch = c.api == wire::CUDA_LAUNCH_KERNEL || c.api == wire::CUDA_DRIVER_LAUNCH_KERNEL;
      call.collective = IsCollective(c.api);
      call.bytes = IsCollective(c.api) ? c.coll_bytes : c.bytes;
      call.sync_kind = c.sync_kind;
      if (th.last == UINT32_MAX) call.release_ns = t0_;
      sc.enq = Add(call);
      Link(th.last, sc.enq, EdgeKind::kThread);
      th.last = sc.enq;
      if (blocks) {
        GraphNode w = HostNode(NodeKind::kSyncWait, c.t_ns + enq, c.end_ns(), c.tid);
        w.sync_kind = c.sync_kind;
        w.bytes = c.bytes;
        sc.wait = Add(w);
        Link(sc.enq, sc.wait, EdgeKind::kThread);
        th.last = sc.wait;
      }
      th.end = c.end_ns();
      th.top = static_cast<int32_t>(calls_.size());
      top_of_[pos] = th.top;
      calls_.push_back(sc);
    }
    // The steps' thread runs to their end (the host time after its last call).
    if (auto it = threads.find(step_tid); it != threads.end() && it->second.end < t1_)
      Gap(it->second.end, t1_, step_tid, it->second.last);
    // The last blocking call of each step on each thread.
    std::map<std::pair<uint32_t, uint32_t>, uint32_t> last;
    for (const StepCall& sc : calls_)
      if (sc.wait != UINT32_MAX) last[{nodes_[sc.wait].lane, nodes_[sc.wait].step}] = sc.wait;
    for (const auto& [key, at] : last) nodes_[at].last_sync = true;
  }

  // The host's time between two calls of a thread, cut where a step starts (each step's
  // host time is its own: a step is done when its last node ends). Returns the last piece.
  uint32_t Gap(uint64_t from, uint64_t to, uint32_t tid, uint32_t prev) {
    while (from < to) {
      uint64_t cut = to;
      for (const StepMark& s : in_.steps)
        if (s.start_ns > from && s.start_ns < cut) cut = s.start_ns;
      GraphNode gap = HostNode(NodeKind::kHostGap, from, cut, tid);
      if (prev == UINT32_MAX) gap.release_ns = t0_;
      const uint32_t at = Add(gap);
      Link(prev, at, EdgeKind::kThread);
      prev = at;
      from = cut;
    }
    return prev;
  }

  // The top-level call of the steps whose span holds a work's launching span; -1: none, -2:
  // a call before the steps (the work is an earlier step's).
  int64_t LaunchingCall(const GraphWork& w, const HostCall** launched_by = nullptr) const {
    if (!w.api_start_ns) return -1;
    auto hi = std::upper_bound(in_.calls.begin(), in_.calls.end(), w.api_start_ns + kSpanSlackNs,
                               [](uint64_t v, const HostCall& c) { return v < c.t_ns; });
    const HostCall* found = nullptr;
    size_t scanned = 0;
    for (auto it = hi; it != in_.calls.begin() && scanned < kContainScan; ++scanned) {
      --it;
      if (!InChain(*it) || !PutsWork(*it)) continue;
      if (it->end_ns() + kSpanSlackNs >= w.api_end_ns) {  // the innermost: its top-level call is the outer one
        found = &*it;
        break;
      }
    }
    if (!found) return -1;
    if (launched_by) *launched_by = found;
    if (found->t_ns < t0_) return -2;
    return top_of_[static_cast<size_t>(found - in_.calls.data())];
  }

  void Device() {
    std::unordered_map<uint32_t, uint32_t> prev_on_stream;  // CUPTI stream → its last node
    std::unordered_map<uint32_t, uint64_t> prior_end;       // CUPTI stream → end of earlier steps' work
    std::map<std::tuple<uint64_t, int, uint64_t, int32_t>, int32_t> signatures;
    for (const GraphWork& w : in_.works) {
      const HostCall* by = nullptr;
      const int64_t call = LaunchingCall(w, &by);
      if (call == -2 || (call == -1 && (w.start_ns < t0_ || w.start_ns >= t1_))) {
        uint64_t& e = prior_end[w.stream];
        e = std::max(e, w.end_ns);
        if (by) prior_on_handle_[by->stream].push_back({by->t_ns, w.end_ns});
        continue;
      }
      GraphNode n;
      n.kind = w.comm ? NodeKind::kComm : w.copy ? NodeKind::kCopy : NodeKind::kKernel;
      n.start_ns = w.start_ns;
      n.end_ns = std::max(w.start_ns, w.end_ns);
      n.lane = w.stream;
      n.pageable = w.pageable;
      n.bytes = w.bytes;
      const HostCall* c = call >= 0 ? calls_[call].c : nullptr;
      n.step = StepOf(c ? c->t_ns : w.start_ns);
      if (c && w.comm && IsCollective(c->api)) {
        n.bytes = c->coll_bytes;
        if (c->comm_nranks > 1) {
          auto key = std::make_tuple(c->comm_hash, static_cast<int>(c->api), c->coll_bytes, c->peer);
          auto [it, fresh] = signatures.try_emplace(key, static_cast<int32_t>(signatures.size()));
          n.signature = it->second;
          n.join = JoinOf(*c);
        }
      }
      uint64_t free_at = 0;  // when its stream was free of earlier work
      if (auto p = prior_end.find(w.stream); p != prior_end.end() && p->second > t0_) {
        n.release_ns = p->second;
        free_at = p->second;
      }
      if (!c) n.release_ns = std::max(n.release_ns, w.start_ns);  // launch unknown: as measured
      const uint32_t at = Add(n);
      work_nodes_.push_back(at);
      work_calls_.push_back(call);
      if (auto p = prev_on_stream.find(w.stream); p != prev_on_stream.end()) {
        Link(p->second, at, EdgeKind::kStream);
        free_at = std::max(free_at, nodes_[p->second].end_ns);
      }
      prev_on_stream[w.stream] = at;
      free_at_.push_back(free_at);
      if (c && Blocks(*c) && calls_[call].own_work < 0) calls_[call].own_work = static_cast<int32_t>(at);
    }
    Events();
    // A launch's latency: as measured where the launch bound the work (its stream free, the
    // events it waited for ended), else the typical one (a replay that frees the stream or
    // drops the event needs the latency).
    struct LaunchEdge {
      uint32_t from, to;
      int64_t measured;
      bool bound;
    };
    std::vector<LaunchEdge> launches;
    for (size_t i = 0; i < work_nodes_.size(); ++i) {
      if (work_calls_[i] < 0) continue;
      const uint32_t at = work_nodes_[i], from = calls_[work_calls_[i]].enq;
      const int64_t measured = static_cast<int64_t>(nodes_[at].start_ns) - static_cast<int64_t>(nodes_[from].end_ns);
      launches.push_back({from, at, measured, free_at_[i] + kLaunchBoundNs <= nodes_[at].start_ns});
    }
    std::vector<int64_t> bound;
    for (const LaunchEdge& l : launches)
      if (l.bound) bound.push_back(l.measured);
    const int64_t typical = MiddleOf(std::move(bound));
    for (const LaunchEdge& l : launches)
      edges_.push_back({l.from, l.to, EdgeKind::kLaunch, l.bound ? l.measured : std::min(typical, l.measured)});
    g_.comm_min_ns.assign(signatures.size(), UINT64_MAX);
    for (const GraphNode& n : nodes_)
      if (n.kind == NodeKind::kComm && n.signature >= 0)
        g_.comm_min_ns[n.signature] = std::min(g_.comm_min_ns[n.signature], n.dur());
  }

  // The comm kernel's identity across ranks (CommKey), once per graph; -1 when its
  // communicator's hash names nothing on another rank (never seen created).
  int32_t JoinOf(const HostCall& c) {
    if (!c.comm_identified || c.seq == UINT64_MAX) return -1;
    CommKey k{c.comm_hash, c.seq, -1, -1, c.comm_nranks};
    if (c.api == wire::NCCL_SEND || c.api == wire::NCCL_RECV) {
      if (c.peer < 0) return -1;
      k.from = c.api == wire::NCCL_SEND ? c.comm_rank : c.peer;
      k.to = c.api == wire::NCCL_SEND ? c.peer : c.comm_rank;
      k.members = 2;
    }
    if (!joined_.insert(k).second) return -1;  // a call's second kernel: the first one joins
    g_.joins.push_back(k);
    return static_cast<int32_t>(g_.joins.size() - 1);
  }

  // cudaEventRecord(e, t) … cudaStreamWaitEvent(s, e): the first work launched on s after
  // the wait follows the last work launched on t before the record. Records and waits made
  // before the steps (the previous step's) count too: their work is a release.
  struct Marker {
    int64_t node = -1;  // the awaited work's node, -1: an earlier step's work (or none)
    uint64_t end = 0;   // when it ended
  };
  uint64_t PriorEnd(uint64_t handle, uint64_t before) const {
    uint64_t end = 0;
    if (auto it = prior_on_handle_.find(handle); it != prior_on_handle_.end())
      for (const auto& [launched, e] : it->second)
        if (launched < before) end = std::max(end, e);
    return end;
  }
  void Events() {
    std::unordered_map<uint64_t, Marker> marker;               // event handle → what its record awaits
    std::unordered_map<uint64_t, int64_t> last_on_handle;      // stream handle → its last work's node so far
    std::unordered_map<uint64_t, std::vector<Marker>> waiting;  // stream handle → what its next work follows
    // Works in the order of their launching calls.
    std::vector<size_t> order;
    for (size_t i = 0; i < work_nodes_.size(); ++i)
      if (work_calls_[i] >= 0) order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return work_calls_[a] < work_calls_[b]; });
    size_t next = 0;
    for (size_t p = 0; p < in_.calls.size(); ++p) {
      const HostCall& c = in_.calls[p];
      const int32_t ci = top_of_[p];
      if (ci >= 0 && calls_[ci].c == &c) {
        for (; next < order.size() && work_calls_[order[next]] == ci; ++next) {
          const size_t w = order[next];
          const uint32_t node = work_nodes_[w];
          if (auto wq = waiting.find(c.stream); wq != waiting.end()) {
            for (const Marker& m : wq->second) {
              free_at_[w] = std::max(free_at_[w], m.end);
              if (m.node >= 0) Link(static_cast<uint32_t>(m.node), node, EdgeKind::kEvent);
              else nodes_[node].release_ns = std::max(nodes_[node].release_ns, m.end);
            }
            waiting.erase(wq);
          }
          last_on_handle[c.stream] = node;
        }
      }
      if (c.api == wire::CUDA_EVENT_RECORD) {
        Marker m;
        if (auto it = last_on_handle.find(c.stream); it != last_on_handle.end()) m = {it->second, nodes_[it->second].end_ns};
        else m.end = PriorEnd(c.stream, c.t_ns);
        marker[c.seq] = m;
      } else if (c.api == wire::CUDA_STREAM_WAIT_EVENT) {
        if (auto m = marker.find(c.seq); m != marker.end()) waiting[c.stream].push_back(m->second);
      } else if (c.api == wire::CUDA_EVENT_SYNCHRONIZE && c.seq && ci >= 0 && calls_[ci].c == &c) {
        // A host that names the event it waits on (an imported trace does) waits for
        // the work before that event's record.
        if (auto m = marker.find(c.seq); m != marker.end() && m->second.node >= 0) event_work_[ci] = m->second.node;
      } else if ((c.sync_kind == kSyncStream || c.sync_kind == kSyncPoll) && ci >= 0 && calls_[ci].c == &c) {
        // A stream that waits on events with no work after the waits yet (DDP's and
        // Megatron's "compute stream waits for the comm stream", then the step's
        // cudaStreamSynchronize): syncing it waits for the awaited work too. The waits stay
        // pending for the stream's next work.
        if (auto wq = waiting.find(c.stream); wq != waiting.end())
          for (const Marker& m : wq->second)
            if (m.node >= 0) stream_waits_[ci].push_back(m.node);
      }
    }
  }

  // A blocking call waits for its own work, else for its event's (an event sync that names
  // it), else for the work queued before it (its stream's for a stream sync or a polling
  // loop, and the work its stream waits on through events; every stream's otherwise) that
  // ended last before the call returned.
  void Syncs() {
    for (StepCall& sc : calls_) {
      if (sc.wait == UINT32_MAX) continue;
      const HostCall& c = *sc.c;
      int64_t dep = sc.own_work;
      if (auto e = event_work_.find(static_cast<int32_t>(&sc - calls_.data())); dep < 0 && e != event_work_.end())
        dep = e->second;
      if (dep < 0) {
        const bool one_stream = c.sync_kind == kSyncStream || c.sync_kind == kSyncPoll;
        uint64_t best_end = 0;
        for (size_t i = 0; i < work_nodes_.size(); ++i) {
          const int64_t wc = work_calls_[i];
          if (wc < 0 || calls_[wc].c->t_ns >= c.t_ns) continue;
          if (one_stream && calls_[wc].c->stream != c.stream) continue;
          const GraphNode& w = nodes_[work_nodes_[i]];
          if (w.end_ns <= c.end_ns() + kSpanSlackNs && w.end_ns >= best_end) best_end = w.end_ns, dep = work_nodes_[i];
        }
        if (auto sw = stream_waits_.find(static_cast<int32_t>(&sc - calls_.data())); one_stream && sw != stream_waits_.end())
          for (const int64_t n : sw->second) {
            const GraphNode& w = nodes_[n];
            if (w.end_ns <= c.end_ns() + kSpanSlackNs && w.end_ns >= best_end) best_end = w.end_ns, dep = n;
          }
      }
      if (dep < 0) continue;
      GraphNode& w = nodes_[sc.wait];
      // Measured: the wait starts when both its enqueue and the work are done.
      w.start_ns = std::min(w.end_ns, std::max(w.start_ns, nodes_[dep].end_ns));
      Link(static_cast<uint32_t>(dep), sc.wait, EdgeKind::kSync);
    }
  }

  void Link(uint32_t from, uint32_t to, EdgeKind k, int64_t lag = 0) {
    if (from != UINT32_MAX) edges_.push_back({from, to, k, lag});
  }

  // Nodes in start order, edges grouped by their target, every edge forward.
  StepGraph Finish() {
    std::vector<uint32_t> order(nodes_.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      return std::tie(nodes_[a].start_ns, nodes_[a].end_ns) < std::tie(nodes_[b].start_ns, nodes_[b].end_ns);
    });
    std::vector<uint32_t> rank(nodes_.size());
    for (uint32_t i = 0; i < order.size(); ++i) rank[order[i]] = i;
    std::vector<TmpEdge> fwd;
    fwd.reserve(edges_.size());
    for (const TmpEdge& e : edges_)
      if (rank[e.from] < rank[e.to]) fwd.push_back({rank[e.from], rank[e.to], e.kind, e.lag});
    std::stable_sort(fwd.begin(), fwd.end(), [](const TmpEdge& a, const TmpEdge& b) { return a.to < b.to; });
    g_.nodes.resize(nodes_.size());
    for (uint32_t i = 0; i < order.size(); ++i) g_.nodes[i] = nodes_[order[i]];
    g_.edges.reserve(fwd.size());
    for (const TmpEdge& e : fwd) {
      GraphNode& n = g_.nodes[e.to];
      if (!n.n_in) n.first_in = static_cast<uint32_t>(g_.edges.size());
      ++n.n_in;
      g_.edges.push_back({e.from, e.kind, e.lag});
    }
    for (GraphNode& n : g_.nodes)
      if (!n.n_in && !n.release_ns) n.release_ns = n.start_ns;  // nothing explains its start: as measured
    return std::move(g_);
  }

  const GraphInput& in_;
  uint64_t t0_ = 0, t1_ = 0;
  StepGraph g_;
  std::vector<GraphNode> nodes_;
  std::vector<TmpEdge> edges_;
  std::vector<StepCall> calls_;
  std::vector<uint32_t> work_nodes_;  // the works' nodes, in start order
  std::vector<int64_t> work_calls_;   // each one's launching call (index into calls_), -1: unknown
  std::vector<uint64_t> free_at_;     // each one's: when its stream and the events it waited for were done
  // Stream handle → (launch, end) of the earlier steps' work on it.
  std::unordered_map<uint64_t, std::vector<std::pair<uint64_t, uint64_t>>> prior_on_handle_;
  std::set<CommKey> joined_;     // the CommKeys given out
  std::vector<int32_t> top_of_;  // per input call: its top-level call of the steps (index into calls_), -1: none
  std::unordered_map<int32_t, int64_t> event_work_;  // a cudaEventSynchronize (calls_) → its event's work (node)
  // A stream sync (calls_) → the work its stream waited on through events, no work after.
  std::unordered_map<int32_t, std::vector<int64_t>> stream_waits_;
};

}  // namespace

GraphWork GraphWorkOf(const DeviceWork& w) {
  GraphWork g;
  g.start_ns = w.start_ns;
  g.end_ns = w.end_ns;
  if (w.api) g.api_start_ns = w.api->start_ns, g.api_end_ns = w.api->end_ns;
  g.bytes = w.bytes;
  g.stream = w.stream;
  g.copy = w.kind != wire::ACTIVITY_KERNEL;
  g.comm = w.comm;
  g.pageable = w.pageable;
  return g;
}

StepGraph BuildStepGraph(const GraphInput& in) { return Builder(in).Build(); }

}  // namespace gpuwatch::collector
