// See collectives.h.
#include "analyze/collectives.h"

#include <algorithm>

#include "common/bus_factor.h"
#include "common/format.h"
#include "common/thresholds.h"

namespace gpuwatch::collector {

uint64_t CollectiveFigures::Op::TransferNs(uint64_t wait_ns) const {
  const uint64_t link_ns = timed.ns - local.ns;
  return link_ns > wait_ns ? link_ns - wait_ns : 0;
}

double CollectiveFigures::Op::algbw(uint64_t wait_ns) const {
  const uint64_t t = TransferNs(wait_ns);
  return t ? Gbps(static_cast<double>(link_bytes()), Seconds(t)) : 0.0;
}

double CollectiveFigures::Op::busbw(uint64_t wait_ns) const {
  const uint64_t t = TransferNs(wait_ns);
  return t ? Gbps(bus_bytes, Seconds(t)) : 0.0;
}

void CollectiveFigures::Op::Count(const HostCall& c) {
  ++count;
  bytes += c.coll_bytes;
  if (!c.timed) return;
  timed.Note(c.coll_bytes, c.gpu_ns);
  if (c.comm_nranks == 1)
    local.Note(c.coll_bytes, c.gpu_ns);
  else
    bus_bytes += static_cast<double>(c.coll_bytes) * BusFactor(c.api, c.comm_nranks);
}

void CollectiveFigures::Op::Add(const Op& o) {
  count += o.count;
  bytes += o.bytes;
  timed.Add(o.timed);
  bus_bytes += o.bus_bytes;
  local.Add(o.local);
}

CollectiveFigures::Op CollectiveFigures::Total() const {
  Op t;
  for (const Op& o : ops) t.Add(o);
  return t;
}

void CollectiveFigures::Merge(const CollectiveFigures& o) {
  for (size_t i = 0; i < ops.size(); ++i) ops[i].Add(o.ops[i]);
}

void CollectiveCounter::OnHostCall(const HostCall& c) {
  // Recorded into a CUDA graph: ran nothing now (graphs.captured_calls counts it).
  if (!IsCollective(c.api) || c.captured) return;
  const auto it = std::find_if(kCollOps.begin(), kCollOps.end(), [&](const CollOp& op) { return op.api == c.api; });
  const auto op = static_cast<uint8_t>(it - kCollOps.begin());
  f_.ops[op].Count(c);
  if (c.seq % f_.stride == 0 && f_.sample.size() >= kMaxCollCalls) ThinSample();
  if (c.seq % f_.stride == 0 && f_.sample.size() < kMaxCollCalls)
    f_.sample.push_back({c.comm_hash, c.seq, c.t_ns, c.timed ? c.gpu_ns : 0, !c.comm_identified,
                         HasFlag(c.flags, wire::FLAG_KERNEL_TIMED), op});
}

// Every other call of the sample goes: the stride doubles. Not when that would free
// nothing (calls of an unknown communicator all have sequence number 0): the sample then
// stays full, and the stride, which scales the waits, stays what it is.
void CollectiveCounter::ThinSample() {
  const uint64_t wider = f_.stride * 2;
  auto& s = f_.sample;
  if (std::none_of(s.begin(), s.end(), [&](const CollCall& k) { return k.seq % wider != 0; })) return;
  f_.stride = wider;
  std::erase_if(s, [&](const CollCall& k) { return k.seq % wider != 0; });
}

}  // namespace gpuwatch::collector
