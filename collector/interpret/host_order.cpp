// See host_order.h.
#include "interpret/host_order.h"

namespace gpuwatch::collector {

void HostOrder::Hold(const HostCall& c) {
  const uint64_t key = Key(c);
  newest_ = std::max(newest_, c.end_ns());
  if (in_order_.empty() || key >= in_order_.back().key) {
    Held& h = in_order_.emplace_back();  // a HostCall is ~150 bytes: copied once, in place
    h.key = key;
    h.call = c;
  } else
    late_.push(Held{key, c});
}

}  // namespace gpuwatch::collector
