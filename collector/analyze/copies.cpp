// See copies.h.
#include "analyze/copies.h"

namespace gpuwatch::collector {

void CopyFigures::Direction::Add(const Direction& o) {
  count += o.count;
  bytes += o.bytes;
  ns += o.ns;
  pageable_count += o.pageable_count;
  pageable_bytes += o.pageable_bytes;
  blocking_count += o.blocking_count;
}

void CopyFigures::Kind::Add(const Kind& o) {
  count += o.count;
  bytes += o.bytes;
  ns += o.ns;
}

void CopyFigures::Merge(const CopyFigures& o) {
  for (int i = 0; i < kCopyDirections; ++i) dir[i].Add(o.dir[i]);
  pageable.Add(o.pageable);
  blocking.Add(o.blocking);
}

void CopyCounter::OnHostCall(const HostCall& c) {
  if (!IsCopy(c.api)) return;
  const int d = CopyDirection(c.copy_kind);
  if (d < 0) return;
  const bool pageable = HasFlag(c.flags, wire::FLAG_PAGEABLE);
  const bool blocked = HasFlag(c.flags, wire::FLAG_BLOCKED_HOST);
  CopyFigures::Direction& x = f_.dir[d];
  ++x.count;
  x.bytes += c.bytes;
  x.ns += c.dur_ns;
  if (pageable) {
    ++x.pageable_count;
    x.pageable_bytes += c.bytes;
  }
  x.blocking_count += blocked;
  if (c.sync_kind != kNotSync) return;  // a small blocking copy: a sync
  CopyFigures::Kind* k = pageable ? &f_.pageable : blocked ? &f_.blocking : nullptr;
  if (!k) return;
  ++k->count;
  k->bytes += c.bytes;
  k->ns += c.dur_ns;
}

}  // namespace gpuwatch::collector
