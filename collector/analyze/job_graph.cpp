// See job_graph.h.
#include "analyze/job_graph.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <numeric>

#include "common/median.h"

namespace gpuwatch::collector {

namespace {
// A rank's graph joins when all but 1/kJoinedShareInv of its named comm kernels find every
// member: a graph of steps shifted by one against the others' (8 a graph) misses 1/8.
constexpr size_t kJoinedShareInv = 10;
}  // namespace

std::optional<JobGraph> JobGraph::Join(std::vector<RankStepGraph> ranks) {
  if (ranks.size() < 2) return std::nullopt;
  for (const RankStepGraph& r : ranks)
    if (!r.graph || r.graph->nodes.empty() || r.graph->steps != ranks[0].graph->steps) return std::nullopt;
  JobGraph j;
  j.ranks_ = std::move(ranks);
  std::map<CommKey, std::vector<Member>> by_key;
  j.join_of_.resize(j.ranks_.size());
  for (uint32_t r = 0; r < j.ranks_.size(); ++r) {
    const StepGraph& g = *j.ranks_[r].graph;
    j.join_of_[r].assign(g.nodes.size(), -1);
    for (uint32_t i = 0; i < g.nodes.size(); ++i) {
      const GraphNode& n = g.nodes[i];
      if (n.kind == NodeKind::kComm && n.join >= 0 && static_cast<size_t>(n.join) < g.joins.size())
        by_key[g.joins[n.join]].push_back({r, i});
    }
  }
  // A join needs every member, once each (a graph names a call once: step_graph_builder.cpp).
  // A call the graph could not tie to its kernel has no name there: its members elsewhere
  // replay it alone, as measured. Graphs of other steps leave many so: not joined.
  std::vector<size_t> named(j.ranks_.size(), 0), joined(j.ranks_.size(), 0);
  for (const auto& [key, members] : by_key) {
    for (const Member& m : members) ++named[m.rank];
    if (members.size() > static_cast<size_t>(key.members)) return std::nullopt;
    if (members.size() < static_cast<size_t>(key.members)) continue;
    for (const Member& m : members) j.join_of_[m.rank][m.node] = static_cast<int32_t>(j.joins_.size()), ++joined[m.rank];
    j.joins_.push_back(members);
  }
  for (size_t r = 0; r < j.ranks_.size(); ++r)
    if (joined[r] * kJoinedShareInv < named[r] * (kJoinedShareInv - 1)) return std::nullopt;
  if (j.joins_.empty() || !j.Offsets() || !j.Order()) return std::nullopt;
  return j;
}

// Each rank's clock against the first rank's: none on one host; across hosts, the median
// over the joins shared with a rank already placed of the difference of their ends (a
// collective's, a send's and recv's kernels end together). Across hosts every rank must be
// reached through joins: ranks that never meet have no clock in common.
bool JobGraph::Offsets() {
  const size_t n = ranks_.size();
  bool one_host = true;
  for (const RankStepGraph& r : ranks_) one_host = one_host && r.host == ranks_[0].host;
  offset_.assign(n, 0);
  std::vector<bool> placed(n, false);
  placed[0] = true;
  for (bool more = true; more;) {
    more = false;
    std::vector<std::vector<int64_t>> diffs(n);
    for (const std::vector<Member>& members : joins_) {
      const Member* known = nullptr;
      for (const Member& m : members)
        if (placed[m.rank]) known = &m;
      if (!known) continue;
      const int64_t ref = static_cast<int64_t>(ranks_[known->rank].graph->nodes[known->node].end_ns) - offset_[known->rank];
      for (const Member& m : members)
        if (!placed[m.rank]) diffs[m.rank].push_back(static_cast<int64_t>(ranks_[m.rank].graph->nodes[m.node].end_ns) - ref);
    }
    for (size_t r = 0; r < n; ++r)
      if (!placed[r] && !diffs[r].empty()) {
        offset_[r] = one_host ? 0 : MiddleOf(std::move(diffs[r]));
        placed[r] = more = true;
      }
  }
  // On one host, ranks that never meet share the clock all the same (JoinSampledGraphs
  // replays side by side the groups of ranks that overlap in time).
  return one_host || std::all_of(placed.begin(), placed.end(), [](bool p) { return p; });
}

// A replay order over every rank's nodes: a node after its inputs, a join's members
// together once every member's inputs are done (Kahn's, the joins as one item). A rank's
// own nodes are in start order, but two ranks may meet at two communicators in opposite
// orders of start: only the dependencies themselves give an order.
bool JobGraph::Order() {
  const size_t n = ranks_.size();
  std::vector<std::vector<uint32_t>> pending(n), out_first(n), out(n);
  size_t total = 0;
  for (uint32_t r = 0; r < n; ++r) {
    const StepGraph& g = *ranks_[r].graph;
    const size_t N = g.nodes.size();
    total += N;
    pending[r].resize(N);
    out_first[r].assign(N + 1, 0);
    for (uint32_t i = 0; i < N; ++i) {
      pending[r][i] = g.nodes[i].n_in;
      for (uint32_t k = g.nodes[i].first_in; k < g.nodes[i].first_in + g.nodes[i].n_in; ++k) ++out_first[r][g.edges[k].from + 1];
    }
    std::partial_sum(out_first[r].begin(), out_first[r].end(), out_first[r].begin());
    out[r].resize(g.edges.size());
    std::vector<uint32_t> fill(out_first[r].begin(), out_first[r].end() - 1);
    for (uint32_t i = 0; i < N; ++i)
      for (uint32_t k = g.nodes[i].first_in; k < g.nodes[i].first_in + g.nodes[i].n_in; ++k) out[r][fill[g.edges[k].from]++] = i;
  }
  std::vector<uint32_t> arrived(joins_.size(), 0);
  std::deque<Member> ready;
  auto inputs_done = [&](uint32_t r, uint32_t i) {
    const int32_t j = join_of_[r][i];
    if (j < 0) ready.push_back({r, i});
    else if (++arrived[j] == joins_[j].size()) ready.push_back({kJoinItem, static_cast<uint32_t>(j)});
  };
  for (uint32_t r = 0; r < n; ++r)
    for (uint32_t i = 0; i < pending[r].size(); ++i)
      if (!pending[r][i]) inputs_done(r, i);
  order_.clear();
  order_.reserve(total);
  size_t done = 0;
  auto release = [&](const Member& m) {
    ++done;
    for (uint32_t k = out_first[m.rank][m.node]; k < out_first[m.rank][m.node + 1]; ++k)
      if (--pending[m.rank][out[m.rank][k]] == 0) inputs_done(m.rank, out[m.rank][k]);
  };
  while (!ready.empty()) {
    const Member it = ready.front();
    ready.pop_front();
    order_.push_back(it);
    if (it.rank != kJoinItem) release(it);
    else
      for (const Member& m : joins_[it.node]) release(m);
  }
  return done == total;
}

uint64_t JobGraph::Span(const std::vector<std::vector<uint64_t>>& end, int64_t* from, uint32_t* steps,
                        std::vector<PathReplay>* per_rank, std::vector<uint64_t>* rank_from) const {
  std::vector<int64_t> done;
  int64_t first_start = std::numeric_limits<int64_t>::max();
  for (size_t r = 0; r < ranks_.size(); ++r) {
    const StepGraph& g = *ranks_[r].graph;
    std::vector<uint64_t> rank_done;
    uint64_t rank_from_ns = 0;
    uint32_t rank_steps = 0;
    const uint64_t span = StepsSpan(g, end[r], &rank_from_ns, &rank_steps, &rank_done);
    if (per_rank) (*per_rank)[r].span_ns = span, (*per_rank)[r].steps = rank_steps;
    if (rank_from) rank_from->push_back(rank_from_ns);
    done.resize(rank_done.size(), std::numeric_limits<int64_t>::min());
    for (size_t s = 0; s < rank_done.size(); ++s) done[s] = std::max(done[s], static_cast<int64_t>(rank_done[s]) - offset_[r]);
    first_start = std::min(first_start, static_cast<int64_t>(g.start_ns) - offset_[r]);
    *steps = rank_steps;
  }
  *from = done.size() > 1 ? done[0] : first_start;
  return done.back() > *from ? static_cast<uint64_t>(done.back() - *from) : 0;
}

uint64_t JobGraph::MeasuredSpan() const {
  std::vector<std::vector<uint64_t>> end(ranks_.size());
  for (size_t r = 0; r < ranks_.size(); ++r)
    for (const GraphNode& n : ranks_[r].graph->nodes) end[r].push_back(n.end_ns);
  int64_t from = 0;
  uint32_t steps = 0;
  return Span(end, &from, &steps, nullptr, nullptr);
}

JobPathReplay JobGraph::Replay(const std::vector<ReplayFix>& fixes, bool rank_paths) const {
  JobPathReplay out;
  const size_t R = ranks_.size();
  std::vector<std::vector<uint64_t>> start(R), end(R), arrive(R), dur(R);
  std::vector<std::vector<int64_t>> bound_by(R);  // per node: the edge that set its arrival; -1: its release
  for (size_t r = 0; r < R; ++r) {
    const size_t N = ranks_[r].graph->nodes.size();
    start[r].resize(N), end[r].resize(N), arrive[r].resize(N), dur[r].resize(N), bound_by[r].assign(N, -1);
  }
  std::vector<Member> last_of(joins_.size());  // each join's last member to arrive

  // When a node's kept inputs let it start, and how long it takes (as ReplayGraph: the
  // latest of its release and its inputs' ends plus their lags; on a tie, the input).
  auto arrival = [&](uint32_t r, uint32_t i) {
    const StepGraph& g = *ranks_[r].graph;
    const GraphNode& n = g.nodes[i];
    const ReplayFix* fix = r < fixes.size() ? &fixes[r] : nullptr;
    uint64_t s = n.release_ns;
    for (uint32_t k = n.first_in; k < n.first_in + n.n_in; ++k) {
      const GraphEdge& e = g.edges[k];
      if (fix && fix->keeps && !fix->keeps(g, i, e)) continue;
      const int64_t at = static_cast<int64_t>(end[r][e.from]) + e.lag_ns;
      const uint64_t t = at < 0 ? 0 : static_cast<uint64_t>(at);
      if (t >= s) s = t, bound_by[r][i] = k;
    }
    arrive[r][i] = s;
    dur[r][i] = fix && fix->duration ? fix->duration(g, i) : n.dur();
  };
  for (const Member& it : order_) {
    if (it.rank != kJoinItem) {
      arrival(it.rank, it.node);
      start[it.rank][it.node] = arrive[it.rank][it.node];
      end[it.rank][it.node] = start[it.rank][it.node] + dur[it.rank][it.node];
      continue;
    }
    // A join: the transfer starts on every member when the last one arrives, and lasts the
    // shortest member's kernel (the last to arrive waited for no one).
    int64_t at = std::numeric_limits<int64_t>::min();
    uint64_t transfer = UINT64_MAX;
    for (const Member& m : joins_[it.node]) {
      arrival(m.rank, m.node);
      const int64_t a = static_cast<int64_t>(arrive[m.rank][m.node]) - offset_[m.rank];
      if (a > at) at = a, last_of[it.node] = m;
      transfer = std::min(transfer, dur[m.rank][m.node]);
    }
    for (const Member& m : joins_[it.node]) {
      start[m.rank][m.node] = static_cast<uint64_t>(std::max<int64_t>(0, at + offset_[m.rank]));
      end[m.rank][m.node] = start[m.rank][m.node] + transfer;
    }
  }
  int64_t from_common = 0;
  out.ranks.resize(R);
  std::vector<uint64_t> rank_from;
  out.span_ns = Span(end, &from_common, &out.steps, &out.ranks, &rank_from);

  // The critical path back from (r, i) to `from` (per rank, its clock): each node's own time
  // and the lag of the input that bound its arrival, as ReplayGraph walks it. At a join,
  // `cross` goes on through the member that arrived last; otherwise the rank's own wait for
  // it is its peer_wait.
  std::vector<double> rank_ns(R, 0);
  std::map<uint32_t, double> streams;
  auto walk = [&](uint32_t r, uint32_t i, bool cross, const std::vector<uint64_t>& from, double (&part_ns)[kPathParts]) {
    auto add = [&](int part, uint64_t s, uint64_t e) {
      s = std::max(s, from[r]);
      if (e <= s) return;
      part_ns[part] += static_cast<double>(e - s);
      if (cross) {
        rank_ns[r] += static_cast<double>(e - s);
        if (part == kPathGpuCompute) streams[ranks_[r].graph->nodes[i].lane] += static_cast<double>(e - s);
      }
    };
    for (;;) {
      const StepGraph* g = ranks_[r].graph.get();
      const int part = PathPartOf(g->nodes[i]);
      const int32_t j = join_of_[r][i];
      if (j >= 0) {
        add(kPathComm, start[r][i], end[r][i]);
        if (cross) {
          r = last_of[j].rank, i = last_of[j].node;
          g = ranks_[r].graph.get();
        } else {
          add(kPathPeerWait, arrive[r][i], start[r][i]);
        }
      } else if (g->nodes[i].kind == NodeKind::kComm) {  // not joined: its measured wait
        const uint64_t transfer = std::min(dur[r][i], CommTransferNs(*g, i));
        add(kPathPeerWait, start[r][i], start[r][i] + (dur[r][i] - transfer));
        add(kPathComm, start[r][i] + (dur[r][i] - transfer), end[r][i]);
      } else {
        add(part, start[r][i], end[r][i]);
      }
      const uint64_t in_at = arrive[r][i];
      if (in_at <= from[r]) break;
      if (bound_by[r][i] < 0) {  // before its release: an earlier step's work, or the host before the steps
        add(part, from[r], in_at);
        break;
      }
      const GraphEdge& e = g->edges[bound_by[r][i]];
      if (in_at > end[r][e.from]) {
        add(e.kind == EdgeKind::kLaunch ? kPathLaunch : part, end[r][e.from], in_at);
      } else if (e.kind == EdgeKind::kLaunch) {  // the work began before its launch returned
        const uint64_t lo = std::max(in_at, from[r]), hi = std::max(end[r][e.from], from[r]);
        if (hi > lo) {
          part_ns[kPathLaunch] -= static_cast<double>(hi - lo);
          if (cross) rank_ns[r] -= static_cast<double>(hi - lo);
        }
      }
      i = e.from;
    }
    for (double& p : part_ns) p = std::max(p, 0.0);
  };
  auto last_node = [&](uint32_t r) {
    uint32_t last = 0;
    for (uint32_t i = 0; i < end[r].size(); ++i)
      if (end[r][i] >= end[r][last]) last = i;
    return last;
  };
  // Each rank's own path, from its own first step's done.
  for (uint32_t r = 0; r < R && rank_paths; ++r) {
    std::vector<uint64_t> from(R, 0);
    from[r] = rank_from[r];
    walk(r, last_node(r), false, from, out.ranks[r].part_ns);
  }
  // The job's: from the last end of any rank, from the job's first step's done.
  std::vector<uint64_t> from(R);
  uint32_t last_rank = 0;
  int64_t last_end = std::numeric_limits<int64_t>::min();
  for (uint32_t r = 0; r < R; ++r) {
    from[r] = static_cast<uint64_t>(std::max<int64_t>(0, from_common + offset_[r]));
    const int64_t e = static_cast<int64_t>(end[r][last_node(r)]) - offset_[r];
    if (e > last_end) last_end = e, last_rank = r;
  }
  walk(last_rank, last_node(last_rank), true, from, out.part_ns);
  out.streams = StreamsLargestFirst(streams);
  for (uint32_t r = 0; r < R; ++r)
    if (rank_ns[r] > 0) out.path_ranks.push_back({ranks_[r].rank, rank_ns[r]});
  std::sort(out.path_ranks.begin(), out.path_ranks.end(), [](const PathRank& a, const PathRank& b) { return a.ns > b.ns; });
  return out;
}

namespace {

// Graphs of every rank, flattened, grouped by the joins they share (union-find).
struct Groups {
  std::vector<uint32_t> parent;
  uint32_t Find(uint32_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
};

}  // namespace

std::vector<JobGraph> JoinSampledGraphs(const std::vector<RankGraphs>& ranks) {
  std::vector<JobGraph> out;
  if (ranks.size() < 2) return out;
  std::vector<std::pair<uint32_t, uint32_t>> at;  // flattened graph → (rank index, graph index)
  for (uint32_t r = 0; r < ranks.size(); ++r)
    for (uint32_t k = 0; k < ranks[r].graphs.size(); ++k) at.push_back({r, k});
  Groups groups;
  groups.parent.resize(at.size());
  std::iota(groups.parent.begin(), groups.parent.end(), 0);
  std::map<CommKey, uint32_t> holder;
  for (uint32_t x = 0; x < at.size(); ++x)
    for (const CommKey& key : ranks[at[x].first].graphs[at[x].second]->joins) {
      auto [it, fresh] = holder.try_emplace(key, x);
      if (!fresh) groups.parent[groups.Find(x)] = groups.Find(it->second);
    }
  std::map<uint32_t, std::vector<uint32_t>> members;  // root → its graphs, in rank order
  for (uint32_t x = 0; x < at.size(); ++x) members[groups.Find(x)].push_back(x);
  // Each group by its graphs' window, earliest first.
  struct Group {
    uint64_t start = UINT64_MAX, end = 0;
    std::vector<uint32_t> graphs;
  };
  std::vector<Group> found;
  for (auto& [root, xs] : members) {
    Group g;
    for (uint32_t x : xs) {
      const StepGraph& sg = *ranks[at[x].first].graphs[at[x].second];
      g.start = std::min(g.start, sg.start_ns);
      for (const GraphNode& n : sg.nodes) g.end = std::max(g.end, n.end_ns);
    }
    g.graphs = std::move(xs);
    found.push_back(std::move(g));
  }
  std::sort(found.begin(), found.end(), [](const Group& a, const Group& b) { return a.start < b.start; });
  // Ranks that never meet (two pipelines side by side, no collective between them) share no
  // join: on one host (one clock), groups of other ranks whose windows overlap are replayed
  // as one, the job's step the slower one's.
  bool one_host = true;
  for (const RankGraphs& r : ranks) one_host = one_host && r.host == ranks[0].host;
  std::vector<bool> used(found.size(), false);
  for (size_t a = 0; a < found.size(); ++a) {
    if (used[a]) continue;
    used[a] = true;
    std::vector<uint32_t> xs = found[a].graphs;
    std::vector<int> per_rank(ranks.size(), 0);
    for (uint32_t x : xs) ++per_rank[at[x].first];
    uint64_t end = found[a].end;
    for (size_t b = a + 1; one_host && xs.size() < ranks.size() && b < found.size() && found[b].start < end; ++b) {
      if (used[b] || std::any_of(found[b].graphs.begin(), found[b].graphs.end(), [&](uint32_t x) { return per_rank[at[x].first] > 0; }))
        continue;
      used[b] = true;
      for (uint32_t x : found[b].graphs) xs.push_back(x), ++per_rank[at[x].first];
      end = std::max(end, found[b].end);
    }
    if (std::any_of(per_rank.begin(), per_rank.end(), [](int n) { return n != 1; })) continue;  // each rank once
    std::sort(xs.begin(), xs.end());  // in rank order (flattened by rank)
    std::vector<RankStepGraph> group;
    for (uint32_t x : xs) group.push_back({ranks[at[x].first].rank, ranks[at[x].first].host, ranks[at[x].first].graphs[at[x].second]});
    if (auto j = JobGraph::Join(std::move(group))) out.push_back(std::move(*j));
  }
  return out;
}

}  // namespace gpuwatch::collector
