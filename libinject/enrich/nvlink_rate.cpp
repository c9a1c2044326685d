// See nvlink_rate.h.
#include "enrich/nvlink_rate.h"

namespace gpuwatch::inject {

NvLinkRate::Rate NvLinkRate::Update(uint64_t t_ns, const LinkCounters (&now)[kMaxLinks]) {
  Rate r;
  if (t_ns_ && t_ns > t_ns_) {
    uint64_t tx_kib = 0, rx_kib = 0;
    for (unsigned i = 0; i < kMaxLinks; ++i) {
      const LinkCounters &a = prev_[i], &b = now[i];
      if (!a.ok || !b.ok || b.tx_kib < a.tx_kib || b.rx_kib < a.rx_kib) continue;
      tx_kib += b.tx_kib - a.tx_kib;
      rx_kib += b.rx_kib - a.rx_kib;
      ++r.links;
    }
    // KiB over ns -> bytes per second; long double keeps 2^64 KiB x 1024e9 exact enough.
    const long double per_ns = 1024.0L * 1e9L / static_cast<long double>(t_ns - t_ns_);
    if (r.links) {
      r.tx_bytes_per_s = static_cast<uint64_t>(tx_kib * per_ns + 0.5L);
      r.rx_bytes_per_s = static_cast<uint64_t>(rx_kib * per_ns + 0.5L);
    }
  }
  for (unsigned i = 0; i < kMaxLinks; ++i) prev_[i] = now[i];
  t_ns_ = t_ns;
  return r;
}

}  // namespace gpuwatch::inject
