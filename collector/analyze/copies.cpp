// See copies.h.
#include "analyze/copies.h"

namespace gpuwatch::collector {

void CopyFigures::Merge(const CopyFigures& o) {
  for (int i = 0; i < kCopyDirections; ++i) dir[i].Add(o.dir[i]);
  pageable.Add(o.pageable);
  blocking.Add(o.blocking);
  d2d.Add(o.d2d);
  memset.Add(o.memset);
}

void CopyCounter::OnHostCall(const HostCall& c) {
  if (c.captured) return;  // recorded into a graph: moved nothing
  if (IsMemset(c.api)) f_.memset.Note(c.bytes, c.dur_ns);
  if (!IsCopy(c.api)) return;
  if (c.copy_kind == wire::COPY_D2D) f_.d2d.Note(c.bytes, c.dur_ns);
  const int d = CopyDirection(c.copy_kind);
  if (d < 0) return;
  const bool pageable = HasFlag(c.flags, wire::FLAG_PAGEABLE);
  const bool blocked = HasFlag(c.flags, wire::FLAG_BLOCKED_HOST);
  CopyFigures::Direction& x = f_.dir[d];
  x.calls.Note(c.bytes, c.dur_ns);
  if (pageable) x.pageable.Note(c.bytes, c.dur_ns);
  x.blocking_count += blocked;
  if (c.sync_kind != kNotSync) return;  // a small blocking copy: a sync
  if (Tally* k = pageable ? &f_.pageable : blocked ? &f_.blocking : nullptr) k->Note(c.bytes, c.dur_ns);
}

}  // namespace gpuwatch::collector
