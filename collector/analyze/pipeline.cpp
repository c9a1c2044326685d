// See pipeline.h.
#include "analyze/pipeline.h"

#include <algorithm>
#include <map>
#include <utility>

#include "analyze/rank_result.h"
#include "common/thresholds.h"

namespace gpuwatch::collector {

int PipelineFigures::stage() const { return links.empty() ? -1 : links.front().comm_rank; }
int PipelineFigures::stages() const { return links.empty() ? 0 : links.front().comm_size; }

void PipelineFigures::Merge(const PipelineFigures& o) {
  links_dropped += o.links_dropped;
  recv_kernels += o.recv_kernels;
  recv_kernel_ns += o.recv_kernel_ns;
  bubble_ns += o.bubble_ns;
  grouped_calls += o.grouped_calls;
}

P2pLink* PipelineCounter::LinkFor(const HostCall& c) {
  const bool send = c.api == wire::NCCL_SEND;
  for (P2pLink& l : f_.links)
    if (l.comm_id == c.comm_id && l.peer == c.peer && l.send == send) return &l;
  if (f_.links.size() >= kMaxP2pLinks) return nullptr;
  P2pLink l;
  l.comm_hash = c.comm_hash;
  l.comm_id = c.comm_id;
  l.comm_size = c.comm_nranks;
  l.peer = c.peer;
  l.send = send;
  f_.links.push_back(std::move(l));
  return &f_.links.back();
}

void PipelineCounter::OnHostCall(const HostCall& c) {
  if ((c.api != wire::NCCL_SEND && c.api != wire::NCCL_RECV) || c.captured) return;
  const bool grouped = HasFlag(c.flags, wire::FLAG_IN_GROUP);
  f_.grouped_calls += grouped;
  P2pLink* l = LinkFor(c);
  if (!l) {
    ++f_.links_dropped;
    return;
  }
  ++l->count;
  l->bytes += c.coll_bytes;
  if (c.timed) {
    ++l->timed;
    l->gpu_ns += c.gpu_ns;
  }
  if (l->call_gpu_ns.size() < kMaxP2pCallsKept) l->call_gpu_ns.push_back(c.timed ? c.gpu_ns : 0);
  if (c.api == wire::NCCL_RECV && !grouped) {
    recv_calls_.push_back({c.t_ns, c.end_ns()});
    if (recv_calls_.size() > kMaxRecvCallsKept) recv_calls_.pop_front();
  }
}

void PipelineCounter::OnDeviceWork(const DeviceWork& w) {
  if (!w.comm || !w.api || recv_calls_.empty()) return;
  // Host calls come in start order, ahead of the work they launched.
  while (!recv_calls_.empty() && recv_calls_.front().end + kRecvCallKeepNs < w.api->start_ns) recv_calls_.pop_front();
  auto it = std::upper_bound(recv_calls_.begin(), recv_calls_.end(), w.api->start_ns,
                             [](uint64_t t, const Span& s) { return t < s.start; });
  if (it == recv_calls_.begin() || std::prev(it)->end < w.api->end_ns) return;  // not launched by a recv
  ++f_.recv_kernels;
  f_.recv_kernel_ns += w.dur_ns();
  // Work comes in start order: a recv overlapping the previous one extends it.
  if (!recv_kernels_.empty() && w.start_ns <= recv_kernels_.back().end)
    recv_kernels_.back().end = std::max(recv_kernels_.back().end, w.end_ns);
  else
    recv_kernels_.push_back({w.start_ns, w.end_ns});
}

// Of the recv kernels, the time in [gap_from, gap_to) (no compute ran) is bubble; those that
// end by `until` (the end of the compute span after the gap) are done with.
void PipelineCounter::SettleRecvs(uint64_t gap_from, uint64_t gap_to, uint64_t until) {
  for (auto it = recv_kernels_.begin(); it != recv_kernels_.end();) {
    const uint64_t a = std::max(it->start, gap_from), b = std::min(it->end, gap_to);
    if (b > a) f_.bubble_ns += b - a;
    if (it->end <= until) {
      it = recv_kernels_.erase(it);
    } else {
      it->start = std::max(it->start, until);
      ++it;
    }
  }
}

// A compute (non-NCCL) span closed: every recv kernel that starts before its end was seen.
void PipelineCounter::OnBusy(const BusySpan& b) {
  if (!b.noncomm) return;
  SettleRecvs(noncomm_end_, b.start_ns, b.end_ns);
  noncomm_end_ = std::max(noncomm_end_, b.end_ns);
}

PipelineFigures PipelineCounter::Result(const RankFacts& facts) const {
  PipelineFigures r = f_;
  for (const Span& k : recv_kernels_)  // after the last compute: all of it
    if (k.end > std::max(k.start, noncomm_end_)) r.bubble_ns += k.end - std::max(k.start, noncomm_end_);
  for (P2pLink& l : r.links)
    if (const CommFacts* c = facts.Comm(l.comm_id)) {
      l.comm_rank = c->rank;
      if (c->nranks > 0) l.comm_size = c->nranks;
    }
  return r;
}

const PipelineRankWait* JobPipeline::WaitOf(int rank) const {
  for (const PipelineRankWait& w : waits)
    if (w.rank == rank) return &w;
  return nullptr;
}

namespace {

using CommSlot = std::pair<uint64_t, int32_t>;  // (communicator, index in it)

// The matched pairs' waits (seconds), each side's GPU time beyond the shorter of the two, the
// transfer: whichever side arrived first waited for the other. Scaled from the pairs kept to
// `pairs` (the calls beyond kMaxP2pCallsKept); a pair with an untimed side has no wait in GPU time.
void MatchWaits(const std::vector<uint64_t>& sends, const std::vector<uint64_t>& recvs, uint64_t pairs,
                PipelineLink& pl) {
  const size_t n = std::min(sends.size(), recvs.size());
  uint64_t send_ns = 0, recv_ns = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!sends[i] || !recvs[i]) continue;
    ++pl.matched;
    const uint64_t transfer = std::min(sends[i], recvs[i]);
    send_ns += sends[i] - transfer;
    recv_ns += recvs[i] - transfer;
  }
  const double scale = n && pairs > n ? static_cast<double>(pairs) / static_cast<double>(n) : 1.0;
  pl.send_wait_s = send_ns * 1e-9 * scale;
  pl.recv_wait_s = recv_ns * 1e-9 * scale;
}

}  // namespace

JobPipeline MatchPipeline(const RankList& ranks) {
  JobPipeline jp;
  std::map<CommSlot, int> world;                       // communicator members
  std::map<std::pair<int, CommSlot>, const P2pLink*> recv_of;  // (receiver, (comm, sender index))
  for (const RankResult& r : ranks)
    for (const P2pLink& l : r.pipeline.links) {
      if (l.comm_rank >= 0) world[{l.comm_hash, l.comm_rank}] = r.rank;
      if (!l.send) recv_of[{r.rank, {l.comm_hash, l.peer}}] = &l;
    }
  auto world_of = [&](uint64_t hash, int32_t index) {
    auto it = world.find({hash, index});
    return it == world.end() ? -1 : it->second;
  };
  std::map<std::pair<int, CommSlot>, bool> paired;
  for (const RankResult& r : ranks)
    for (const P2pLink& l : r.pipeline.links) {
      if (!l.send) continue;
      PipelineLink pl;
      pl.from = r.rank;
      pl.to = world_of(l.comm_hash, l.peer);
      pl.sends = l.count;
      pl.bytes_sent = l.bytes;
      auto it = recv_of.find({pl.to, {l.comm_hash, l.comm_rank}});
      if (pl.to >= 0 && it != recv_of.end()) {
        paired[it->first] = true;
        pl.recvs = it->second->count;
        pl.bytes_received = it->second->bytes;
        MatchWaits(l.call_gpu_ns, it->second->call_gpu_ns, std::min(pl.sends, pl.recvs), pl);
      }
      jp.links.push_back(pl);
    }
  for (const auto& [key, l] : recv_of) {  // recvs whose sender did not report its sends
    if (paired.count(key)) continue;
    PipelineLink pl;
    pl.from = world_of(key.second.first, key.second.second);
    pl.to = key.first;
    pl.recvs = l->count;
    pl.bytes_received = l->bytes;
    jp.links.push_back(pl);
  }
  // Each rank's waits, and the waits it caused its neighbours.
  std::map<int, PipelineRankWait> waits;
  std::map<int, double> caused;
  for (const RankResult& r : ranks)
    if (r.pipeline.stage() >= 0) waits[r.rank] = {r.rank, r.pipeline.stage(), 0, 0};
  for (const PipelineLink& l : jp.links) {
    if (waits.count(l.from)) waits[l.from].send_wait_s += l.send_wait_s;
    if (waits.count(l.to)) waits[l.to].recv_wait_s += l.recv_wait_s;
    caused[l.from] += l.recv_wait_s;  // its receiver waited for its send
    caused[l.to] += l.send_wait_s;    // its sender waited for its recv
  }
  for (const auto& [rank, w] : waits) jp.waits.push_back(w);
  std::map<int, PipelineStage> stages;
  for (const RankResult& r : ranks) {
    const int s = r.pipeline.stage();
    if (s < 0) continue;
    PipelineStage& st = stages[s];
    st.stage = s;
    st.ranks.push_back(r.rank);
    st.bubble_s += r.pipeline.bubble_ns * 1e-9;
    st.wait_s += waits[r.rank].wait_s();
    st.caused_s += caused[r.rank];
  }
  for (auto& [s, st] : stages) {
    const double n = static_cast<double>(st.ranks.size());
    st.bubble_s /= n;
    st.wait_s /= n;
    st.caused_s /= n;
    std::sort(st.ranks.begin(), st.ranks.end());
    jp.stages.push_back(st);
  }
  return jp;
}

}  // namespace gpuwatch::collector
