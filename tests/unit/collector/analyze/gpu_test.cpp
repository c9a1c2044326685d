// The gpu analysis: the device timeline of synthetic CUPTI activity records, through the
// interpret stage (interpret/device_sweep.h) into GpuFigures and its views.
#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <sstream>

#include "analyze/job_result.h"
#include "analyze/rank_model.h"
#include "fixtures.h"
#include "report/figures_json.h"
#include "report/figures_text.h"

using namespace gwtest;

namespace {

constexpr uint64_t kUs = 1000;
constexpr uint64_t kMs = 1000 * kUs;
constexpr uint64_t kS = 1000 * kMs;

wire::Activity* Kernel(wire::Batch* b, uint64_t start, uint64_t end, uint32_t corr = 0,
                       uint32_t name_id = 1, uint32_t stream = 1) {
  auto* a = Work(b, wire::ACTIVITY_KERNEL, start, end, corr, stream);
  a->set_name_id(name_id);
  return a;
}

wire::Activity* Api(wire::Batch* b, uint32_t corr, uint64_t start, uint64_t end) {
  auto* a = Work(b, wire::ACTIVITY_API, start, end, corr, 0);
  a->set_api_domain(1);
  return a;
}

void Name(wire::Batch* b, uint32_t id, const std::string& name) {
  auto* k = b->add_kernel_names();
  k->set_id(id);
  k->set_name(name);
}

col::RankResult Run(const std::vector<wire::Batch>& batches) {
  col::RankModel m;
  for (const auto& b : batches) m.OnBatch(b);
  return m.Result();
}

nlohmann::json Gpu(const std::vector<wire::Batch>& batches) { return col::GpuJson(Run(batches).gpu); }

// The job line's parts of a job of these ranks.
std::vector<std::string> Headlines(const std::vector<col::RankResult>& ranks) {
  return col::JobHeadlines(col::MergeRanks(ranks));
}
bool HasGpuHeadline(const std::vector<std::string>& parts) {
  return std::any_of(parts.begin(), parts.end(), [](const std::string& p) { return p.rfind("gpu busy ", 0) == 0; });
}

double Sec(uint64_t ns) { return static_cast<double>(ns) * 1e-9; }

// Exact (up to double rounding of the same integer).
Approx Exact(double v) { return Approx(v).epsilon(1e-12).margin(1e-15); }
// The histogram's guarantee.
Approx Pct(double v) { return Approx(v).epsilon(0.01); }

struct Iv {
  uint64_t s, e;
};

// Brute-force union: busy, gaps (list) and active span.
struct Truth {
  uint64_t busy = 0, active = 0;
  std::vector<uint64_t> gaps;
};
Truth Sweep(std::vector<Iv> v) {
  std::sort(v.begin(), v.end(), [](const Iv& a, const Iv& b) { return a.s < b.s; });
  Truth t;
  uint64_t cs = v[0].s, ce = v[0].e, last = 0;
  for (const auto& i : v) {
    last = std::max(last, i.e);
    if (i.s <= ce) {
      ce = std::max(ce, i.e);
      continue;
    }
    t.busy += ce - cs;
    t.gaps.push_back(i.s - ce);
    cs = i.s;
    ce = i.e;
  }
  t.busy += ce - cs;
  t.active = last - v[0].s;
  return t;
}

double NearestRank(std::vector<uint64_t> v, double p) {
  std::sort(v.begin(), v.end());
  size_t r = static_cast<size_t>(std::ceil(p * v.size()));
  return static_cast<double>(v[std::max<size_t>(r, 1) - 1]);
}

}  // namespace

TEST_CASE("collector: gpu busy is the exact union over streams, whatever the arrival order") {
  std::mt19937_64 rng(42);
  std::vector<Iv> iv;
  std::vector<wire::Activity> acts;
  // 4 streams over 10 s: kernels and copies of 1 us .. 2 ms with gaps of 0 .. 3 ms.
  for (uint32_t stream = 1; stream <= 4; ++stream) {
    uint64_t t = 1 * kS + stream * 37 * kUs;
    uint32_t corr = stream * 1000000;
    while (t < 11 * kS) {
      t += rng() % (3 * kMs);
      const uint64_t d = 1 * kUs + rng() % (2 * kMs);
      wire::Batch tmp;
      const auto kind = rng() % 5 == 0 ? wire::ACTIVITY_MEMSET : wire::ACTIVITY_KERNEL;
      acts.push_back(*Work(&tmp, kind, t, t + d, ++corr, stream));
      acts.push_back(*Api(&tmp, corr, t - 50 * kUs, t - 40 * kUs));
      iv.push_back({t, t + d});
      t += d;
    }
  }
  // Device sync records are not device work.
  wire::Batch tmp;
  acts.push_back(*Work(&tmp, wire::ACTIVITY_SYNC, 0, 20 * kS));
  // Arrival: sorted by end, then shuffled within blocks of 400 records (about 0.3 s of
  // work, so API records and work land in different batches), batches of 150.
  std::sort(acts.begin(), acts.end(),
            [](const auto& a, const auto& b) { return a.end_ns() < b.end_ns(); });
  for (size_t i = 0; i < acts.size(); i += 400)
    std::shuffle(acts.begin() + i, acts.begin() + std::min(acts.size(), i + 400), rng);
  std::vector<wire::Batch> batches;
  for (size_t i = 0; i < acts.size(); ++i) {
    if (i % 150 == 0) batches.emplace_back().set_gpu_source(wire::GPU_SOURCE_CUPTI);
    *batches.back().add_activities() = acts[i];
  }

  const Truth t = Sweep(iv);
  const auto g = Gpu(batches);
  CHECK(g["source"] == "cupti");
  CHECK(g["busy_s"].get<double>() == Exact(Sec(t.busy)));
  CHECK(g["active_s"].get<double>() == Exact(Sec(t.active)));
  CHECK(g["utilization"].get<double>() == Exact(double(t.busy) / t.active));
  CHECK(g["gaps"]["count"] == t.gaps.size());
  uint64_t gap_ns = 0;
  for (auto x : t.gaps) gap_ns += x;
  CHECK(g["gaps"]["total_s"].get<double>() == Exact(Sec(gap_ns)));
  CHECK(g["gaps"]["p50_us"].get<double>() == Pct(NearestRank(t.gaps, 0.5) / 1e3));
  CHECK(g["gaps"]["p90_us"].get<double>() == Pct(NearestRank(t.gaps, 0.9) / 1e3));
  CHECK(g["gaps"]["p99_us"].get<double>() == Pct(NearestRank(t.gaps, 0.99) / 1e3));
  CHECK(g["gaps"]["max_us"].get<double>() ==
        Exact(*std::max_element(t.gaps.begin(), t.gaps.end()) / 1e3));
  CHECK(g["late_records"] == 0);
  CHECK(g["window_overflows"] == 0);
  CHECK(g["unmatched_correlations"] == 0);
  CHECK(g["launch_delay"]["p50_us"].get<double>() == Pct(40.0));
}

TEST_CASE("collector: gpu fully shuffled records within the window still sweep exactly") {
  // Everything within 1.5 s, shuffled across 10 batches: API records before or after work.
  std::mt19937_64 rng(7);
  std::vector<Iv> iv;
  std::vector<wire::Activity> acts;
  wire::Batch tmp;
  for (uint32_t i = 1; i <= 2000; ++i) {
    const uint64_t s = 5 * kS + rng() % (1500 * kMs), d = 1 + rng() % (400 * kUs);
    acts.push_back(*Kernel(&tmp, s, s + d, i, 1, 1 + i % 7));
    acts.push_back(*Api(&tmp, i, s - 10 * kUs, s - 5 * kUs));
    iv.push_back({s, s + d});
  }
  std::shuffle(acts.begin(), acts.end(), rng);
  std::vector<wire::Batch> batches(10);
  for (size_t i = 0; i < acts.size(); ++i) *batches[i % 10].add_activities() = acts[i];
  const Truth t = Sweep(iv);
  const auto g = Gpu(batches);
  CHECK(g["busy_s"].get<double>() == Exact(Sec(t.busy)));
  CHECK(g["gaps"]["count"] == t.gaps.size());
  CHECK(g["kernels"]["count"] == 2000);
  CHECK(g["unmatched_correlations"] == 0);
  CHECK(g["launch_delay"]["p99_us"].get<double>() == Pct(5.0));
}

TEST_CASE("collector: gpu idle gaps are classified sync, host, launch or other wait") {
  wire::Batch b;
  b.set_gpu_source(wire::GPU_SOURCE_CUPTI);
  // K1 [1000, 1100] us.
  Api(&b, 1, 990 * kUs, 995 * kUs);
  Kernel(&b, 1000 * kUs, 1100 * kUs, 1);
  // Gap 1100..1500 (400 us): the host sat in cudaStreamSynchronize 1100..1480 (95%);
  // K2's launch started late too, but sync wins.
  Add(&b, wire::CUDA_STREAM_SYNCHRONIZE, 1100 * kUs, 380 * kUs);
  Api(&b, 2, 1450 * kUs, 1460 * kUs);
  Kernel(&b, 1500 * kUs, 1600 * kUs, 2);
  // Gap 1600..1710 (110 us): K3's launch call began at 1700, after K2 ended: host_wait.
  // A short blocked copy inside the gap (20 us of 110) does not make it a sync wait.
  Copy(&b, wire::CUDA_MEMCPY, wire::COPY_D2H, 4, 1610 * kUs, 20 * kUs,
       wire::FLAG_BLOCKED_HOST);
  Api(&b, 3, 1700 * kUs, 1705 * kUs);
  Kernel(&b, 1710 * kUs, 1800 * kUs, 3);
  // Gap 1800..1810 (10 us), K4's launch call began in the gap, briefly: launch_wait.
  Api(&b, 4, 1802 * kUs, 1806 * kUs);
  Kernel(&b, 1810 * kUs, 1900 * kUs, 4);
  // Gap 1900..2400 (500 us), K5 launched long before: other.
  Api(&b, 5, 1200 * kUs, 1201 * kUs);
  Kernel(&b, 2400 * kUs, 2500 * kUs, 5);
  // Gap 2500..2540 (40 us), K6 has no API record (correlation 0): other.
  Kernel(&b, 2540 * kUs, 2600 * kUs, 0);

  const auto g = Gpu({b});
  CHECK(g["gaps"]["count"] == 5);
  CHECK(g["gaps"]["total_s"].get<double>() == Exact(1060e-6));
  CHECK(g["gaps"]["max_us"].get<double>() == Exact(500.0));
  CHECK(g["gaps"]["p50_us"].get<double>() == Pct(110.0));
  CHECK(g["gaps"]["p90_us"].get<double>() == Pct(500.0));
  CHECK(g["idle_breakdown_s"]["sync_wait"].get<double>() == Exact(400e-6));
  CHECK(g["idle_breakdown_s"]["host_wait"].get<double>() == Exact(110e-6));
  CHECK(g["idle_breakdown_s"]["launch_wait"].get<double>() == Exact(10e-6));
  CHECK(g["idle_breakdown_s"]["other"].get<double>() == Exact(540e-6));
  CHECK(g["busy_s"].get<double>() == Exact(540e-6));
  CHECK(g["active_s"].get<double>() == Exact(1600e-6));
  // Launch delays 5, 40, 5, 4, 1199 us (K6 has none).
  CHECK(g["launch_delay"]["count"] == 5);
  CHECK(g["launch_delay"]["p50_us"].get<double>() == Pct(5.0));
  CHECK(g["launch_delay"]["p99_us"].get<double>() == Pct(1199.0));
}

TEST_CASE("collector: gpu launch delay is clipped at 0, short kernels vs their launch call") {
  wire::Batch b;
  Api(&b, 1, 100 * kUs, 120 * kUs);  // 20 us call
  Kernel(&b, 110 * kUs, 120 * kUs, 1);  // starts before the call returns: delay 0; short
  Api(&b, 2, 200 * kUs, 205 * kUs);
  Kernel(&b, 230 * kUs, 280 * kUs, 2);  // delay 25, not short
  Api(&b, 3, 300 * kUs, 304 * kUs);
  Kernel(&b, 310 * kUs, 313 * kUs, 3);  // delay 6, short
  Kernel(&b, 400 * kUs, 401 * kUs, 0);  // no launch call known: not judged
  // A runtime and a driver record of one launch: the outer span counts.
  Api(&b, 4, 500 * kUs, 530 * kUs);
  Api(&b, 4, 505 * kUs, 510 * kUs);
  Kernel(&b, 540 * kUs, 560 * kUs, 4);  // delay 10, 20 < 30: short
  const auto g = Gpu({b});
  CHECK(g["kernels"]["count"] == 5);
  CHECK(g["kernels"]["short_fraction"].get<double>() == Exact(3.0 / 4));
  CHECK(g["launch_delay"]["count"] == 4);
  // Delays 0, 6, 10, 25: p50 is the 2nd.
  CHECK(g["launch_delay"]["p50_us"].get<double>() == Pct(6.0));
  CHECK(g["launch_delay"]["p99_us"].get<double>() == Pct(25.0));
  CHECK(g["kernels"]["median_us"].get<double>() == Pct(10.0));  // 10, 50, 3, 1, 20
  CHECK(g["kernels"]["total_s"].get<double>() == Exact(84e-6));
}

TEST_CASE("collector: gpu top kernels by time, demangled, communication kernels apart") {
  wire::Batch b;
  Name(&b, 1, "_Z6gemm_fPfi");
  Name(&b, 2, "_Z13ncclDevKernelILi4EEvv");           // void ncclDevKernel<4>()
  Name(&b, 3, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  Name(&b, 4, "_Z28ncclKernel_AllGather_RING_LLPv");
  for (uint32_t i = 0; i < 12; ++i) Name(&b, 10 + i, "small_kernel_" + std::to_string(i));
  uint64_t t = 1 * kMs;
  auto k = [&](uint32_t id, uint64_t d) {
    Kernel(&b, t, t + d, 0, id);
    t += d + kUs;
  };
  for (int i = 0; i < 3; ++i) k(1, 100 * kUs);  // 300 us
  k(2, 1000 * kUs);
  k(3, 500 * kUs);
  k(4, 250 * kUs);
  for (uint32_t i = 0; i < 12; ++i) k(10 + i, (i + 1) * kUs);  // 1..12 us
  Kernel(&b, t, t + 7500, 0, 99);  // never named; 7.5 us
  const auto g = Gpu({b});
  const auto& ks = g["kernels"];
  CHECK(ks["count"] == 3 + 12 + 1);
  CHECK(ks["total_s"].get<double>() == Exact((300 + 78 + 7.5) * 1e-6));
  CHECK(g["comm_kernels"]["count"] == 3);
  CHECK(g["comm_kernels"]["total_s"].get<double>() == Exact(1750e-6));
  const auto& top = ks["top"];
  REQUIRE(top.size() == 10);
  CHECK(top[0]["name"] == "gemm_f(float*, int)");
  CHECK(top[0]["count"] == 3);
  CHECK(top[0]["total_s"].get<double>() == Exact(300e-6));
  CHECK(top[1]["name"] == "small_kernel_11");
  CHECK(top[2]["name"] == "small_kernel_10");
  CHECK(top[5]["name"] == "small_kernel_7");
  CHECK(top[6]["name"] == "kernel#99");  // between 8 and 7 us
  CHECK(top[6]["total_s"].get<double>() == Exact(7.5e-6));
  CHECK(top[9]["name"] == "small_kernel_4");
  for (const auto& e : top) CHECK(e["name"].get<std::string>().find("nccl") == std::string::npos);
}

TEST_CASE("collector: gpu copies from the device's view") {
  wire::Batch b;
  auto* c = Work(&b, wire::ACTIVITY_MEMCPY, 1 * kMs, 3 * kMs);
  c->set_copy_kind(wire::COPY_H2D);
  c->set_bytes(1 << 20);
  c->set_flags(wire::FLAG_PAGEABLE);
  c = Work(&b, wire::ACTIVITY_MEMCPY, 4 * kMs, 5 * kMs);
  c->set_copy_kind(wire::COPY_H2D);
  c->set_bytes(1000);
  c = Work(&b, wire::ACTIVITY_MEMCPY, 6 * kMs, 6 * kMs + 10 * kUs);
  c->set_copy_kind(wire::COPY_D2H);
  c->set_bytes(4);
  c = Work(&b, wire::ACTIVITY_MEMCPY, 7 * kMs, 8 * kMs);  // D2D: busy only
  c->set_copy_kind(wire::COPY_D2D);
  Work(&b, wire::ACTIVITY_MEMSET, 8 * kMs, 9 * kMs)->set_bytes(64);
  const auto g = Gpu({b});
  CHECK(g["memcpy"]["h2d"]["count"] == 2);
  CHECK(g["memcpy"]["h2d"]["bytes"] == (1 << 20) + 1000);
  CHECK(g["memcpy"]["h2d"]["device_s"].get<double>() == Exact(3e-3));
  CHECK(g["memcpy"]["h2d"]["pageable_count"] == 1);
  CHECK(g["memcpy"]["d2h"]["count"] == 1);
  CHECK(g["memcpy"]["d2h"]["device_s"].get<double>() == Exact(10e-6));
  CHECK(g["busy_s"].get<double>() == Exact((2 + 1 + 0.01 + 2) * 1e-3));
  CHECK(g["kernels"]["count"] == 0);
}

TEST_CASE("collector: gpu without CUPTI reports the events source and what it can") {
  wire::Batch b;
  b.set_gpu_source(wire::GPU_SOURCE_EVENTS);
  b.set_gpu_source_detail("CUPTI subscriber already present");
  Coll(&b, wire::NCCL_ALL_REDUCE, 1, 1 << 20, 3 * kMs);
  Coll(&b, wire::NCCL_ALL_REDUCE, 1, 1 << 20, 2 * kMs);
  Coll(&b, wire::NCCL_BROADCAST, 1, 1 << 20, 0, 1000, wire::FLAG_NO_GPU_TIME);
  Add(&b, wire::CUDA_STREAM_SYNCHRONIZE, 1 * kMs, 1 * kMs);
  const col::RankResult r = Run({b});
  const auto g = col::GpuJson(r.gpu);
  CHECK(g["source"] == "events");
  CHECK(g["source_detail"] == "CUPTI subscriber already present");
  CHECK(g["busy_s"].is_null());
  CHECK(g["gaps"].is_null());
  CHECK(g["kernels"].is_null());
  CHECK(g["comm_kernels"]["count"] == 2);
  CHECK(g["comm_kernels"]["total_s"].get<double>() == Exact(5e-3));
  std::string text;
  col::AppendRankText(r, text);
  CHECK(text.find("gpu (events): no device timeline: CUPTI subscriber already present") !=
        std::string::npos);
  CHECK(!HasGpuHeadline(Headlines({r})));

  // No source at all (an old library): events too.
  const auto g2 = Gpu({wire::Batch{}});
  CHECK(g2["source"] == "events");
  CHECK(g2["busy_s"].is_null());
}

TEST_CASE("collector: gpu job totals merge ranks") {
  wire::Batch b0, b1, be;
  b0.set_gpu_source(wire::GPU_SOURCE_CUPTI);
  Kernel(&b0, 1 * kMs, 2 * kMs);
  Kernel(&b0, 3 * kMs, 4 * kMs);  // busy 2 ms, active 3 ms, 1 gap of 1 ms
  Kernel(&b1, 10 * kMs, 13 * kMs);  // busy 3 ms, active 3 ms
  be.set_gpu_source(wire::GPU_SOURCE_EVENTS);
  Coll(&be, wire::NCCL_ALL_REDUCE, 1, 1 << 20, 3 * kMs);
  std::vector<col::RankResult> ranks = {Run({b0}), Run({b1})};
  nlohmann::json obj;
  obj["gpu"] = col::GpuJson(col::MergeRanks(ranks).gpu);
  CHECK(obj["gpu"]["source"] == "cupti");
  CHECK(obj["gpu"]["busy_s"].get<double>() == Exact(5e-3));
  CHECK(obj["gpu"]["utilization"].get<double>() == Exact(5.0 / 6));
  CHECK(obj["gpu"]["gaps"]["count"] == 1);
  CHECK(obj["gpu"]["kernels"]["top"][0]["count"] == 3);
  ranks.push_back(Run({be}));
  obj["gpu"] = col::GpuJson(col::MergeRanks(ranks).gpu);
  CHECK(obj["gpu"]["source"] == "mixed");
  CHECK(obj["gpu"]["source_detail"] == "2 rank(s) cupti, 1 rank(s) events");
  CHECK(obj["gpu"]["comm_kernels"]["count"] == 1);
  CHECK(obj["gpu"]["busy_s"].get<double>() == Exact(5e-3));
}

TEST_CASE("collector: gpu text block is compact and within 80 columns") {
  wire::Batch b;
  b.set_gpu_source(wire::GPU_SOURCE_CUPTI);
  Name(&b, 1,
       "_ZN7cutlass6KernelINS_4gemm6kernel13GemmUniversalINS1_11threadblock"
       "12MmaPipelinedIfEEEEEEvNT_6ParamsE");
  Name(&b, 2, "ncclDevKernel_AllReduce");
  Api(&b, 1, 0, 2 * kUs);
  Kernel(&b, 10 * kUs, 20 * kUs, 1, 1);
  Kernel(&b, 9 * kS, 10 * kS, 0, 2);
  auto* c = Work(&b, wire::ACTIVITY_MEMCPY, 100 * kS, 200 * kS);
  c->set_copy_kind(wire::COPY_H2D);
  c->set_bytes(123456789012ull);
  c->set_flags(wire::FLAG_PAGEABLE);
  const col::RankResult r = Run({b});
  std::string text;
  col::AppendRankText(r, text);
  std::istringstream in(text);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    CHECK(line.size() <= 80);
    CHECK(line.rfind("  ", 0) == 0);
  }
  CHECK(lines >= 6);
  CHECK(text.find("gpu (cupti): busy") != std::string::npos);
  CHECK(text.find("void cutlass::Kernel<") != std::string::npos);
  CHECK(HasGpuHeadline(Headlines({r})));
  std::string again;
  col::AppendRankText(Run({b}), again);
  CHECK(again == text);
}

TEST_CASE("collector: gpu state stays bounded on a long run") {
  // 40 s: a 150 us kernel every 200 us (API record one batch later), a host sync every
  // 10 ms, batches every 50 ms. State must plateau once the API expiry is reached.
  col::RankModel tl;
  auto state = [&] { return tl.interpreter().sweep().StateSize(); };
  uint32_t corr = 0;
  uint64_t t = 1 * kS;
  wire::Batch prev_apis;
  size_t at_10s = 0, max_after = 0;
  for (int batch = 0; batch < 800; ++batch) {
    wire::Batch b;
    b.set_gpu_source(wire::GPU_SOURCE_CUPTI);
    b.mutable_activities()->MergeFrom(prev_apis.activities());
    prev_apis.Clear();
    for (int i = 0; i < 250; ++i, t += 200 * kUs) {
      ++corr;
      Kernel(&b, t, t + 150 * kUs, corr, corr % 50);
      Api(&prev_apis, corr, t - 100 * kUs, t - 95 * kUs);  // before the gap: not host_wait
      if (i % 50 == 0) Add(&b, wire::CUDA_STREAM_SYNCHRONIZE, t + 150 * kUs, 40 * kUs);
    }
    if (batch % 50 == 0) Name(&b, 1000 + batch, "_Z4stepv");
    tl.OnBatch(b);
    if (batch == 200) at_10s = state();
    if (batch > 200) max_after = std::max(max_after, state());
  }
  tl.OnBatch(prev_apis);
  INFO("state at 10 s " << at_10s << ", max later " << max_after);
  CHECK(max_after <= at_10s + at_10s / 20);
  CHECK(at_10s < 100000);
  const col::GpuFigures& s = tl.Result().gpu;
  CHECK(s.kernel_count == 200000);
  CHECK(s.run.busy == 200000 * 150 * kUs);
  CHECK(s.gap_count == 199999);
  CHECK(s.run.IdleTotal() == 199999 * 50 * kUs);
  CHECK(s.run.idle[col::kIdleSync] == 4000 * 50 * kUs);  // sync 40 of 50 us
  CHECK(s.run.idle[col::kIdleOther] == (199999 - 4000) * 50 * kUs);
  CHECK(s.late == 0);
  CHECK(s.unmatched == 0);
}

TEST_CASE("collector: gpu reorder window cap releases early and counts it") {
  col::DeviceSweep::Limits lim;
  lim.max_pending = 100;
  col::RankModel tl(lim);
  // Newest first, 50 a batch: the cap forces early releases, and older records then
  // arrive after the sweep passed them.
  for (int i = 0; i < 1000; i += 50) {
    wire::Batch b;
    for (int j = i; j < i + 50; ++j) Kernel(&b, (1000 - j) * kUs * 10, (1000 - j) * kUs * 10 + kUs);
    tl.OnBatch(b);
    CHECK(tl.interpreter().sweep().StateSize() <= 100 + 1);
  }
  const col::GpuFigures& s = tl.Result().gpu;
  CHECK(s.overflow == 900);
  CHECK(s.kernel_count == 1000);
  CHECK(s.late > 0);
}

namespace {

// The overhead budget recorded [100, 200) ms of a 1 s run. A launch every ms; inside the
// window CUPTI's cost made launches slower, so it holds 50 of the 1000 launches (5%) in
// 10% of the time. Each launch's kernel runs 400 us; the last `untimed` of the window's
// kernels came back without times (the library dropped and counted them).
wire::Batch SampledRun(int untimed) {
  SampledBatch s({{100 * kMs, 200 * kMs}});
  if (untimed > 0) {
    auto* lost = s.b.add_dropped();
    lost->set_reason("gpu_records_incomplete");
    lost->set_count(untimed);
  }
  for (uint64_t ms = 0; ms < 100; ++ms) s.Launch(ms * kMs + kMs / 2, false, 0);
  for (int i = 0; i < 50; ++i) s.Launch(100 * kMs + i * 2 * kMs + kMs / 2, true, i < 50 - untimed ? 400 * kUs : 0);
  for (uint64_t ms = 200; ms < 1050; ++ms) s.Launch(ms * kMs + kMs / 2, false, 0);
  return s.b;
}

}  // namespace

TEST_CASE("collector: a sampled timeline's work stands for the window's launches whose records came back timed") {
  // The last 10 of the window's 50 kernels were still queued when the library detached
  // CUPTI. The 40 timed ones stand for 40 of the window's launches, not 50: unscaled, 1000
  // kernels would read 800.
  const auto g = col::GpuJson(Run({SampledRun(10)}).gpu);
  REQUIRE(g["coverage"]["sampled"] == true);
  CHECK(g["coverage"]["enqueue_share"].get<double>() == Approx(40.0 / 1000));
  CHECK(g["kernels"]["count"] == 1000);
  CHECK(g["busy_s"].get<double>() == Approx(0.4).epsilon(1e-6));
}

TEST_CASE("collector: a sampled timeline's first window stands for the start only, the later ones for the rest") {
  // The first window records the start whole ([0, 40) ms: a launch every ms, kernels of
  // 800 us: warm-up, peers late to their first collective); a second one ([500, 600) ms, 50
  // launches at 2 ms) samples the rest, whose kernels run 400 us. Of the 960 launches after
  // the first window, 50 were recorded: the rest's work is theirs times 19.2, the start's is
  // exact. One share of launches for both (90 of 1000) read busy 578 ms for 416.
  SampledBatch s({{0 * kMs, 40 * kMs}, {500 * kMs, 600 * kMs}});
  for (uint64_t ms = 0; ms < 40; ++ms) s.Launch(ms * kMs + kMs / 2, true, 800 * kUs);
  for (uint64_t ms = 40; ms < 500; ++ms) s.Launch(ms * kMs + kMs / 2, false, 0);
  for (uint64_t i = 0; i < 50; ++i) s.Launch(500 * kMs + i * 2 * kMs + kMs / 2, true, 400 * kUs);
  for (uint64_t ms = 600; ms < 1050; ++ms) s.Launch(ms * kMs + kMs / 2, false, 0);
  const auto g = col::GpuJson(Run({s.b}).gpu);
  REQUIRE(g["coverage"]["sampled"] == true);
  CHECK(g["coverage"]["windows"] == 2);
  CHECK(g["kernels"]["count"] == 1000);
  CHECK(g["busy_s"].get<double>() == Approx(0.416).epsilon(1e-6));
  CHECK(g["kernels"]["total_s"].get<double>() == Approx(0.416).epsilon(1e-6));
}

TEST_CASE("collector: a sampled timeline scales device work by the launches inside windows") {
  const wire::Batch b = SampledRun(0);
  const col::RankResult r = Run({b});
  const auto g = col::GpuJson(r.gpu);
  REQUIRE(g["coverage"]["sampled"] == true);
  CHECK(g["coverage"]["windows"] == 1);
  CHECK(g["coverage"]["enqueue_share"].get<double>() == Approx(50.0 / 1000));
  CHECK(g["coverage"]["share"].get<double>() == Approx(0.1 / g["active_s"].get<double>()).epsilon(0.01));
  // Work scaled by launches, not time: 1000 kernels of 400 us.
  CHECK(g["kernels"]["count"] == 1000);
  CHECK(g["busy_s"].get<double>() == Approx(0.4).epsilon(1e-6));
  CHECK(g["kernels"]["total_s"].get<double>() == Approx(0.4).epsilon(1e-6));
  // The active span is the host's; idle is the rest of it, split as the window saw it.
  CHECK(g["active_s"].get<double>() == Approx(Sec(r.host_last_ns - r.host_first_ns)));
  double idle = 0;
  for (const auto& [kind, s] : g["idle_breakdown_s"].items()) idle += s.get<double>();
  CHECK(idle == Approx(g["active_s"].get<double>() - 0.4).epsilon(1e-6));
  // The window's gaps (1.55 ms, the next launch began after the last kernel ended): host_wait.
  CHECK(g["idle_breakdown_s"]["host_wait"].get<double>() == Approx(idle).epsilon(1e-6));
}
