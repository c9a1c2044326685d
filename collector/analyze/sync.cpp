// See sync.h.
#include "analyze/sync.h"

#include <numeric>

namespace gpuwatch::collector {
namespace {

template <size_t N>
uint64_t Sum(const std::array<uint64_t, N>& a) {
  return std::accumulate(a.begin(), a.end(), uint64_t{0});
}

template <size_t N>
void AddAll(std::array<uint64_t, N>& a, const std::array<uint64_t, N>& b) {
  for (size_t i = 0; i < N; ++i) a[i] += b[i];
}

}  // namespace

uint64_t SyncFigures::TotalCount() const { return Sum(count); }
uint64_t SyncFigures::TotalNs() const { return Sum(ns); }
uint64_t SyncFigures::KindCount() const { return Sum(kind_count); }
uint64_t SyncFigures::KindNs() const { return Sum(kind_ns); }

void SyncFigures::Merge(const SyncFigures& o) {
  AddAll(count, o.count);
  AddAll(ns, o.ns);
  AddAll(kind_count, o.kind_count);
  AddAll(kind_ns, o.kind_ns);
}

void SyncCounter::OnHostCall(const HostCall& c) {
  if (c.sync_kind != kNotSync) {
    ++f_.kind_count[c.sync_kind];
    f_.kind_ns[c.sync_kind] += c.dur_ns;
  }
  if (!c.blocks_host) return;
  for (size_t i = 0; i < SyncFigures::kApis.size(); ++i)
    if (SyncFigures::kApis[i] == c.api) {
      ++f_.count[i];
      f_.ns[i] += c.dur_ns;
    }
}

}  // namespace gpuwatch::collector
