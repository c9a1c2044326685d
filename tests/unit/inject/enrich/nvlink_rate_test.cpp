// NVLink throughput from NVML's cumulative per-link counters (enrich/nvlink_rate.h): bytes per
// second summed over the links read at both readings; a failed field, a counter that went back,
// or no counters at all give no rate, never a zero one.
#include <catch2/catch.hpp>

#include "enrich/nvlink_rate.h"

namespace gi = gpuwatch::inject;
using Links = gi::NvLinkRate::LinkCounters[gi::NvLinkRate::kMaxLinks];

namespace {

constexpr uint64_t kS = 1'000'000'000;

// Links 0..n-1 read, link i at tx = base * (i + 1) KiB, rx = half of it.
void Fill(Links& l, unsigned n, uint64_t base) {
  for (auto& c : l) c = {};
  for (unsigned i = 0; i < n; ++i) l[i] = {true, base * (i + 1), base * (i + 1) / 2};
}

}  // namespace

TEST_CASE("nvlink rate: the first reading has none, then the links' growth summed, per second") {
  gi::NvLinkRate rate;
  Links l;
  Fill(l, 4, 1000);
  const auto first = rate.Update(1 * kS, l);
  CHECK(first.links == 0);
  Fill(l, 4, 3000);  // link i grew by 2000 (i + 1) KiB: 20000 KiB over the 4 links, rx half
  const auto r = rate.Update(3 * kS, l);  // over 2 s
  CHECK(r.links == 4);
  CHECK(r.tx_bytes_per_s == 20000 * 1024 / 2);
  CHECK(r.rx_bytes_per_s == 10000 * 1024 / 2);
}

TEST_CASE("nvlink rate: a link whose field failed is left out, at that reading and the next") {
  gi::NvLinkRate rate;
  Links l;
  Fill(l, 2, 100);
  rate.Update(kS, l);
  Fill(l, 2, 200);
  l[1].ok = false;  // NVML answered an error for link 1
  auto r = rate.Update(2 * kS, l);
  CHECK(r.links == 1);
  CHECK(r.tx_bytes_per_s == 100 * 1024);
  Fill(l, 2, 300);  // link 1 is back: no previous reading of it yet
  r = rate.Update(3 * kS, l);
  CHECK(r.links == 1);
  CHECK(r.tx_bytes_per_s == 100 * 1024);
  Fill(l, 2, 400);
  CHECK(rate.Update(4 * kS, l).links == 2);
}

TEST_CASE("nvlink rate: every field failing, a counter going back, or a forgotten device give no rate") {
  gi::NvLinkRate rate;
  Links l;
  Fill(l, 2, 100);
  rate.Update(kS, l);
  Links none{};
  auto r = rate.Update(2 * kS, none);
  CHECK(r.links == 0);
  CHECK(r.tx_bytes_per_s == 0);
  Fill(l, 1, 500);
  rate.Update(3 * kS, l);
  Fill(l, 1, 10);  // a driver reload: the counter restarted
  CHECK(rate.Update(4 * kS, l).links == 0);
  Fill(l, 1, 20);
  CHECK(rate.Update(5 * kS, l).links == 1);
  rate.Forget();  // the call failed in between: the next reading starts afresh
  Fill(l, 1, 30);
  CHECK(rate.Update(6 * kS, l).links == 0);
}
