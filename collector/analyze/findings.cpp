// See findings.h. Every threshold is in thresholds.h.
#include "analyze/findings.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "analyze/thresholds.h"
#include "report/format.h"

namespace gpuwatch::collector::diag {
namespace {

double S(uint64_t ns) { return ns * 1e-9; }
double Ms(double s) { return s * 1e3; }

double MedianD(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Catalog {
  const char* id;
  const char* title;
  const char* fix;
};
const Catalog kCatalog[] = {
    {"data_loading", "data loading",
     "more DataLoader workers (num_workers), prefetch_factor, pin_memory=True; preprocess "
     "offline; faster formats; data on local NVMe"},
    {"launch_bound", "kernel launch overhead",
     "larger batch; CUDA graphs (torch.cuda.graphs / mode=\"reduce-overhead\"); "
     "torch.compile; fused kernels"},
    {"sync_stall", "host waiting on the GPU (syncs)",
     "avoid .item()/.cpu()/torch.cuda.synchronize() inside the loop; log the loss every N "
     "steps; keep values on the GPU"},
    {"pageable_copy", "copies from pageable memory",
     "pin_memory=True in the DataLoader (or tensor.pin_memory()), then .to(dev, "
     "non_blocking=True)"},
    {"blocking_copy", "blocking copies",
     "use cudaMemcpyAsync / .to(non_blocking=True) from pinned memory; move checkpoint "
     "copies off the critical path"},
    {"communication", "communication not hidden by compute",
     "overlap gradients' all-reduce with backward (DDP bucket_cap_mb, gradient_as_bucket_"
     "view); fewer, larger collectives; check NCCL uses NVLink/IB, not sockets"},
    {"straggler", "a straggler rank",
     "find what makes that rank slower: its host work (data loading), its GPU (clocks, "
     "thermal), or uneven work per rank"},
    {"periodic_stall", "periodic stalls",
     "asynchronous checkpointing (torch.distributed.checkpoint async_save); less frequent "
     "evaluation/logging; do them off the training loop"},
};

const Catalog& Cat(const std::string& id) {
  for (const auto& c : kCatalog)
    if (id == c.id) return c;
  return kCatalog[0];
}

Finding Make(const std::string& id, double lost, double base) {
  Finding f;
  f.id = id;
  f.title = Cat(id).title;
  f.fix = Cat(id).fix;
  f.time_lost_s = lost;
  f.share = base > 0 ? lost / base : 0;
  f.severity = f.share >= kHighShare ? "high" : f.share >= kMediumShare ? "medium" : "low";
  return f;
}

// `environment` has no measured time (0): it stays, after every measured loss.
void Rank(std::vector<Finding>& v) {
  v.erase(std::remove_if(v.begin(), v.end(),
                         [](const Finding& f) {
                           return f.id != "environment" && (f.share < kReportShare || f.time_lost_s <= 0);
                         }),
          v.end());
  std::sort(v.begin(), v.end(), [](const Finding& a, const Finding& b) {
    return a.time_lost_s != b.time_lost_s ? a.time_lost_s > b.time_lost_s : a.id < b.id;
  });
}

// The rank's base time: the sum of its steps, else its active span.
double BaseS(const RankDiag& d) {
  const double t = d.StepsTotalS();
  return t > 0 ? t : d.ActiveS();
}

}  // namespace

std::vector<Finding> RankFindings(const RankDiag& d) {
  std::vector<Finding> out;
  const double base = BaseS(d);
  const std::vector<uint64_t> dur = StepDurations(d);
  const size_t n = dur.size();
  const uint64_t med = Percentile(dur, 0.5);
  const double steps_div = n ? static_cast<double>(d.steps_total ? d.steps_total : n) : 0.0;
  auto per_step_ms = [&](double s) { return steps_div > 0 ? Ms(s / steps_div) : 0.0; };
  // Per-step records are kept for the first kMaxSteps steps: what they show is scaled to
  // every step, as the base (the sum of all steps' durations) covers every step.
  const double to_all_steps = n && d.steps_total > n ? static_cast<double>(d.steps_total) / n : 1.0;
  // Run totals (copies, and everything when the steps carry no device figures) are over the
  // whole run, which can be longer than its steps: their share is of the longer of the two.
  const double run_base = std::max(base, d.ActiveS());
  // "6.1 ms per step", or "1.2 s in all" when there are no steps.
  auto per = [&](double s) {
    return steps_div > 0 ? FmtDuration(s / steps_div) + " per step" : FmtDuration(s) + " in all";
  };

  // Periodic stalls: steps far longer than the median whose excess is mostly GPU idle.
  std::vector<bool> stall(n, false);
  std::vector<size_t> stalls;
  if (n >= 4 && med > 0) {
    std::vector<uint64_t> idle;
    for (const auto& s : d.steps) idle.push_back(s.dev.IdleTotal());
    const uint64_t med_idle = Percentile(idle, 0.5);
    for (size_t k = 0; k < n; ++k) {
      if (dur[k] <= kStallFactor * med) continue;
      const double excess = static_cast<double>(dur[k] - med);
      const double idle_excess = idle[k] > med_idle ? static_cast<double>(idle[k] - med_idle) : 0.0;
      if (d.per_step_device && d.cupti && idle_excess < kStallIdleShare * excess) continue;
      stall[k] = true;
      stalls.push_back(k);
    }
  }
  size_t period = 0;
  if (stalls.size() >= kMinStalls) {
    std::map<size_t, size_t> gaps;
    for (size_t i = 1; i < stalls.size(); ++i) ++gaps[stalls[i] - stalls[i - 1]];
    size_t best = 0;
    for (const auto& [g, c] : gaps)
      if (c > best) best = c, period = g;
    // Irregular long steps (scheduler noise, one-off events) are not a periodic stall.
    if (best < kPeriodShare * (stalls.size() - 1) || period < 2) {
      stalls.clear();
      std::fill(stall.begin(), stall.end(), false);
    }
  }
  if (stalls.size() >= kMinStalls) {
    double lost = 0;
    std::vector<uint64_t> ex;
    for (size_t k : stalls) {
      lost += S(dur[k] - med);
      ex.push_back(dur[k] - med);
    }
    lost *= to_all_steps;
    Finding f = Make("periodic_stall", lost, base);
    f.evidence = {{"stalls", stalls.size()},
                  {"period_steps", period},
                  {"first_stall_step", stalls[0]},
                  {"median_excess_s", S(Percentile(ex, 0.5))},
                  {"median_step_s", S(med)}};
    f.summary = Printf("%zu steps %.0fx longer than the median%s, %s extra each", stalls.size(),
                       static_cast<double>(med + Percentile(ex, 0.5)) / med,
                       Printf(", every %zu steps", period).c_str(),
                       FmtDuration(S(Percentile(ex, 0.5))).c_str());
    out.push_back(f);
  }

  // Per-step categories over the normal steps, scaled to all steps.
  DeviceSlice dev;
  double sync_mid = 0, scale = 1;
  if (d.per_step_device && n > 0) {
    size_t normal = 0;
    for (size_t k = 0; k < n; ++k) {
      if (stall[k]) continue;
      ++normal;
      dev.Add(d.steps[k].dev);
      sync_mid += S(d.steps[k].sync_mid);
    }
    scale = normal ? static_cast<double>(n) / normal * to_all_steps : 1.0;
  } else {
    dev = d.dev;
    sync_mid = S(d.SyncMidNs());
  }
  const double fig_base = d.per_step_device && n > 0 ? base : run_base;
  if (d.cupti) {
    const double host = S(dev.idle[kIdleHost]) * scale;
    Finding f = Make("data_loading", host, fig_base);
    f.evidence = {{"gpu_idle_waiting_for_host_s", host},
                  {"per_step_ms", per_step_ms(host)},
                  {"gpu_utilization", d.ActiveS() > 0 ? S(d.dev.busy) / d.ActiveS() : 0.0}};
    f.summary = Printf("GPU idle %s waiting for the host, which was not waiting on the GPU",
                       per(host).c_str());
    out.push_back(f);
    if (f.share >= kReportShare)
      if (auto io = InputIoFinding(d, f)) out.push_back(*io);

    const double short_share =
        d.kernels_with_api ? static_cast<double>(d.kernels_short) / d.kernels_with_api : 0.0;
    if (short_share >= kShortKernelShare) {
      const double launch = S(dev.idle[kIdleLaunch]) * scale;
      Finding l = Make("launch_bound", launch, fig_base);
      l.evidence = {{"gpu_idle_waiting_for_launches_s", launch},
                    {"per_step_ms", per_step_ms(launch)},
                    {"kernels", d.kernels},
                    {"short_kernel_fraction", short_share},
                    {"launches", d.launches},
                    {"launch_call_mean_us", d.launches ? d.launch_ns * 1e-3 / d.launches : 0.0}};
      l.summary = Printf("%.0f%% of %llu kernels are shorter than their launch call; GPU idle "
                         "%s between them", 100 * short_share,
                         static_cast<unsigned long long>(d.kernels), per(launch).c_str());
      out.push_back(l);
    }
    const double comm = S(dev.ExposedComm()) * scale;
    Finding c = Make("communication", comm, fig_base);
    c.evidence = {{"exposed_comm_s", comm},
                  {"per_step_ms", per_step_ms(comm)},
                  {"comm_kernels_s", S(d.dev.comm)},
                  {"collectives", d.coll_count},
                  {"bytes", d.coll_bytes},
                  {"busbw_gbps", d.coll_gpu_ns ? d.coll_bus_bytes / d.coll_gpu_ns : 0.0}};
    c.summary = Printf("collectives run %s with no compute alongside (busbw %.1f GB/s)",
                       per(comm).c_str(),
                       d.coll_gpu_ns ? d.coll_bus_bytes / d.coll_gpu_ns : 0.0);
    out.push_back(c);
  }
  {
    const double v = sync_mid * scale;
    Finding f = Make("sync_stall", v, fig_base);
    int top = 0;
    for (int k = 1; k < kSyncKinds; ++k)
      if (d.sync_mid_ns[k] > d.sync_mid_ns[top]) top = k;
    nlohmann::json by = nlohmann::json::object();
    for (int k = 0; k < kSyncKinds; ++k)
      if (d.sync_mid_count[k])
        by[SyncKindName(k)] = {{"count", d.sync_mid_count[k]}, {"blocked_s", S(d.sync_mid_ns[k])}};
    uint64_t count = 0;
    for (uint64_t c : d.sync_mid_count) count += c;
    // Where: the call site that blocked longest (syncs that blocked at least
    // GPUWATCH_CALLSITE_US), its Python line when the job runs CPython, else its first frame.
    nlohmann::json site = nullptr;
    std::string where;
    if (!d.sites.empty()) {
      const SiteStat& st = d.sites.front();
      nlohmann::json frames = nlohmann::json::array();
      for (size_t i = 0; i < st.frames.size() && i < 6; ++i) frames.push_back(st.frames[i]);
      site = {{"python", st.python.empty() ? nlohmann::json(nullptr) : nlohmann::json(st.python)},
              {"frames", frames}, {"calls", st.count}, {"blocked_s", S(st.ns)}};
      where = !st.python.empty() ? st.python : (st.frames.empty() ? "" : st.frames.front());
    }
    f.evidence = {{"blocked_s", v}, {"per_step_ms", per_step_ms(v)}, {"count", count},
                  {"top_api", SyncKindName(top)}, {"by_api", by},
                  {"call_site", site}};
    f.summary = Printf("host blocked %s in syncs followed by more work, mostly %s%s%s",
                       per(v).c_str(), SyncKindName(top), where.empty() ? "" : ", at ",
                       Clip(where, 80).c_str());
    out.push_back(f);
  }
  if (d.pageable_count) {
    Finding f = Make("pageable_copy", S(d.pageable_ns), run_base);
    f.evidence = {{"count", d.pageable_count}, {"bytes", d.pageable_bytes},
                  {"host_s", S(d.pageable_ns)}, {"per_step_ms", per_step_ms(S(d.pageable_ns))},
                  {"gbps", d.pageable_ns ? static_cast<double>(d.pageable_bytes) / d.pageable_ns : 0.0}};
    f.summary = Printf("%llu copies, %s from pageable memory held the host %s",
                       static_cast<unsigned long long>(d.pageable_count),
                       FmtBytes(d.pageable_bytes).c_str(), FmtDuration(S(d.pageable_ns)).c_str());
    out.push_back(f);
  }
  if (d.blocking_count) {
    Finding f = Make("blocking_copy", S(d.blocking_ns), run_base);
    f.evidence = {{"count", d.blocking_count}, {"bytes", d.blocking_bytes},
                  {"host_s", S(d.blocking_ns)}};
    f.summary = Printf("%llu blocking copies, %s, held the host %s",
                       static_cast<unsigned long long>(d.blocking_count),
                       FmtBytes(d.blocking_bytes).c_str(), FmtDuration(S(d.blocking_ns)).c_str());
    out.push_back(f);
  }
  for (auto& f : out) f.ranks = {d.rank};
  if (auto env = EnvironmentFinding(d, out)) out.push_back(*env);
  Rank(out);
  return out;
}

namespace {

struct Straggle {
  int rank = -1;
  double last_share = 0;
  uint64_t compared = 0;
  uint64_t stride = 1;  // every stride-th collective was compared (RankDiag::coll_stride)
  std::string method;
  std::vector<double> wait_s;  // per rank index, over the compared collectives
};

Straggle FindStraggler(const RankList& ranks) {
  Straggle st;
  st.wait_s.assign(ranks.size(), 0.0);
  size_t with = 0;
  bool one_host = true;
  for (const auto& r : ranks) {
    with += !r.colls.empty();
    one_host = one_host && r.host == ranks[0].host;
    st.stride = std::max(st.stride, r.coll_stride);  // the calls every rank kept
  }
  if (with < 2) return st;
  st.method = one_host ? "last to call (host clock), wait from collective GPU time" : "shortest collective GPU time";
  std::map<std::pair<uint64_t, uint64_t>, std::vector<std::pair<size_t, const CollCall*>>> groups;
  for (size_t i = 0; i < ranks.size(); ++i)
    for (const auto& c : ranks[i].colls) groups[{c.hash, c.seq}].emplace_back(i, &c);
  std::vector<uint64_t> last(ranks.size(), 0);
  for (const auto& [key, g] : groups) {
    if (g.size() != with) continue;
    size_t li = 0;
    for (size_t j = 1; j < g.size(); ++j) {
      const bool later = one_host ? g[j].second->t_ns > g[li].second->t_ns
                                  : g[j].second->gpu_ns < g[li].second->gpu_ns;
      if (later) li = j;
    }
    const CollCall& lc = *g[li].second;
    // How long each rank waited: inside the collective on the GPU (its CUDA-event time
    // beyond the last arriver's) when timed, else the difference of the host call times.
    for (const auto& [idx, c] : g) {
      uint64_t w;
      if (c->gpu_ns && lc.gpu_ns)
        w = c->gpu_ns > lc.gpu_ns ? c->gpu_ns - lc.gpu_ns : 0;
      else
        w = lc.t_ns > c->t_ns ? lc.t_ns - c->t_ns : 0;
      st.wait_s[idx] += S(w);
    }
    ++last[g[li].first];
    ++st.compared;
  }
  if (!st.compared) return st;
  const size_t top = std::max_element(last.begin(), last.end()) - last.begin();
  st.rank = static_cast<int>(top);
  st.last_share = static_cast<double>(last[top]) / st.compared;
  return st;
}

}  // namespace

std::vector<Finding> JobFindings(const RankList& ranks) {
  const size_t R = ranks.size();
  std::vector<Finding> out;
  if (!R) return out;
  std::vector<double> bases, steps;
  for (const auto& r : ranks) {
    bases.push_back(BaseS(r));
    steps.push_back(static_cast<double>(r.steps_total));
  }
  const double base = MedianD(bases), nsteps = MedianD(steps);

  std::map<std::string, std::vector<double>> lost;
  std::map<std::string, Finding> best;
  std::vector<std::vector<Finding>> per(R);
  for (size_t i = 0; i < R; ++i) per[i] = RankFindings(ranks[i]);

  Straggle st = FindStraggler(ranks);
  if (st.rank >= 0 && st.last_share >= kStragglerLastShare) {
    std::vector<double> others;
    for (size_t i = 0; i < R; ++i)
      if (static_cast<int>(i) != st.rank) others.push_back(st.wait_s[i]);
    const double mean_wait = MedianD(others) / st.compared;
    // The compared collectives are every stride-th: the waits over all of them.
    for (double& w : st.wait_s) w *= static_cast<double>(st.stride);
    std::vector<double> meds;
    for (const auto& r : ranks) meds.push_back(r.StepMedianS());
    double ref = MedianD(meds);
    if (ref <= 0) ref = base / (st.compared * st.stride);
    if (mean_wait >= kStragglerMinWaitShare * ref) {
      Finding f = Make("straggler", MedianD(st.wait_s), base);
      const int srank = ranks[st.rank].rank;
      f.ranks = {srank};
      nlohmann::json waits = nlohmann::json::object();
      for (size_t i = 0; i < R; ++i) waits[std::to_string(ranks[i].rank)] = st.wait_s[i];
      f.evidence = {{"rank", srank}, {"last_share", st.last_share},
                    {"collectives_compared", st.compared}, {"compared_every", st.stride},
                    {"method", st.method},
                    {"wait_s_by_rank", waits},
                    {"mean_wait_per_collective_ms", Ms(mean_wait)}};
      f.summary = Printf("rank %d reaches %.0f%% of collectives last; the others wait %s for "
                         "it each time", srank, 100 * st.last_share,
                         FmtDuration(mean_wait).c_str());
      out.push_back(f);
      // Their waiting is not a communication cost.
      for (size_t i = 0; i < R; ++i)
        for (auto& g : per[i])
          if (g.id == "communication") {
            g.time_lost_s = std::max(0.0, g.time_lost_s - st.wait_s[i]);
            g.evidence["straggler_wait_s"] = st.wait_s[i];
          }
    }
  }
  std::string env_severity = "low";  // the most severe rank's
  for (size_t i = 0; i < R; ++i) {
    for (const auto& g : per[i]) {
      if (g.id == "environment" && (g.severity == "high" || (g.severity == "medium" && env_severity == "low")))
        env_severity = g.severity;
      auto& v = lost[g.id];
      v.resize(R, 0.0);
      v[i] = g.time_lost_s;
      auto it = best.find(g.id);
      if (it == best.end()) {
        best.emplace(g.id, g);
      } else {
        it->second.ranks.push_back(ranks[i].rank);
        if (g.time_lost_s > it->second.time_lost_s) {
          auto keep = it->second.ranks;
          it->second = g;
          it->second.ranks = keep;
        }
      }
    }
  }
  for (auto& [id, g] : best) {
    Finding f = Make(id, MedianD(lost[id]), base);
    f.title = g.title;  // input_io's and environment's depend on what was found
    f.fix = g.fix;
    if (id == "environment") f.severity = env_severity;
    f.ranks = g.ranks;
    std::sort(f.ranks.begin(), f.ranks.end());
    f.evidence = g.evidence;
    nlohmann::json by = nlohmann::json::object();
    for (size_t i = 0; i < R; ++i) by[std::to_string(ranks[i].rank)] = lost[id][i];
    f.evidence["time_lost_s_by_rank"] = by;
    f.summary = g.summary;
    out.push_back(f);
  }
  (void)nsteps;
  Rank(out);
  return out;
}

nlohmann::json StepsJson(const RankDiag& d) {
  nlohmann::json j = {{"count", d.steps_total},
                      {"source", d.step_source},
                      {"median_ms", Ms(S(d.StepPercentileNs(0.5)))},
                      {"p90_ms", Ms(S(d.StepPercentileNs(0.9)))},
                      {"max_ms", Ms(S(d.StepMaxNs()))}};
  if (d.steps_total > d.steps.size()) j["per_step_records"] = d.steps.size();  // the first ones
  const double n = d.steps_total ? static_cast<double>(d.steps_total) : 0.0;
  if (n > 0) {
    DeviceSlice t = d.per_step_device ? DeviceSlice{} : d.dev;
    double sync = d.per_step_device ? 0 : S(d.sync_ns);
    if (d.per_step_device)
      for (const auto& s : d.steps) {
        t.Add(s.dev);
        sync += S(s.sync_mid);
      }
    const double k = d.per_step_device ? static_cast<double>(d.steps.size()) : n;
    j["per_step_ms"] = {{"gpu_compute", Ms(S(t.compute) / k)},
                        {"comm_not_overlapped", Ms(S(t.ExposedComm()) / k)},
                        {"gpu_idle_waiting_for_host", Ms(S(t.idle[kIdleHost]) / k)},
                        {"gpu_idle_waiting_for_launches", Ms(S(t.idle[kIdleLaunch]) / k)},
                        {"gpu_idle_in_syncs", Ms(S(t.idle[kIdleSync]) / k)},
                        {"gpu_idle_other", Ms(S(t.idle[kIdleOther]) / k)},
                        {"host_blocked_in_syncs", Ms(sync / k)},
                        {"copies", Ms(S(t.copy) / k)}};
    j["per_step_source"] = d.per_step_device ? "per step" : "run average";
  } else {
    j["per_step_ms"] = nullptr;
  }
  return j;
}

nlohmann::json FindingsJson(const std::vector<Finding>& f) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& x : f)
    a.push_back({{"id", x.id}, {"title", x.title}, {"severity", x.severity}, {"ranks", x.ranks},
                 {"time_lost_s", x.time_lost_s}, {"share", x.share}, {"summary", x.summary},
                 {"evidence", x.evidence}, {"fix", x.fix}});
  return a;
}

namespace {

void Wrap(std::string& out, const std::string& text, const std::string& indent,
          const std::string& first_indent) {
  std::string line = first_indent;
  size_t i = 0;
  bool empty = true;
  while (i < text.size()) {
    size_t j = text.find(' ', i);
    if (j == std::string::npos) j = text.size();
    const std::string word = text.substr(i, j - i);
    if (!empty && line.size() + 1 + word.size() > kTextWidth) {
      out += line + "\n";
      line = indent;
      empty = true;
    }
    line += (empty ? "" : " ") + word;
    empty = false;
    i = j + 1;
  }
  out += line + "\n";
}

double JobSteps(const RankList& ranks) {
  std::vector<double> s;
  for (const auto& r : ranks) s.push_back(static_cast<double>(r.steps_total));
  return MedianD(s);
}

}  // namespace

std::string Verdict(const RankList& ranks, const std::vector<Finding>& f) {
  uint64_t busy = 0;
  double active = 0;
  bool cupti = false;
  for (const auto& r : ranks)
    if (r.cupti) {
      cupti = true;
      busy += r.dev.busy;
      active += r.ActiveS();
    }
  std::string v = cupti ? Printf("GPU busy %.0f%% of the time.", active > 0 ? 100 * S(busy) / active : 0.0)
                        : std::string("No GPU timeline (CUPTI unavailable).");
  const double steps = JobSteps(ranks);
  // The biggest measured loss; `environment` (no measured time) is added after it, and
  // `input_io` says which kind of data loading it was.
  const Finding *top = nullptr, *env = nullptr, *io = nullptr;
  for (const auto& x : f) {
    if (x.id == "environment") env = &x;
    else if (x.id == "input_io") io = &x;
    else if (!top) top = &x;
  }
  std::string tail;
  if (env && env->severity != "low") tail = " Also: " + env->summary + ".";
  if (!top || top->severity == "low") {
    v += " No significant loss found";
    if (top) v += Printf(" (largest: %s, %.0f%%)", top->title.c_str(), 100 * top->share);
    return v + "." + tail;
  }
  const Finding& t = *top;
  const bool explained = t.id == "data_loading" && io;
  v += " Biggest loss: " + t.title;
  if (explained) v += " (" + io->title + ")";
  if (t.id == "straggler" && !t.ranks.empty()) v += Printf(" (rank %d)", t.ranks[0]);
  if (steps > 0)
    v += Printf(", %s per step (%.0f%%).", FmtDuration(t.time_lost_s / steps).c_str(), 100 * t.share);
  else
    v += Printf(", %s (%.0f%%).", FmtDuration(t.time_lost_s).c_str(), 100 * t.share);
  v += " Fix: " + (explained ? io->fix : t.fix) + ".";
  return v + tail;
}

std::string FindingsText(const RankList& ranks, const std::vector<Finding>& f) {
  std::string out;
  Wrap(out, Verdict(ranks, f), "  ", "");
  if (f.empty()) return out;
  out += "findings, by time lost:\n";
  const double steps = JobSteps(ranks);
  int i = 0;
  for (const auto& x : f) {
    std::string rk;
    for (size_t j = 0; j < x.ranks.size() && j < 8; ++j) rk += (j ? "," : "") + std::to_string(x.ranks[j]);
    if (x.ranks.size() > 8) rk += ",...";
    std::string head = Printf("%d. [%s] %s", ++i, x.severity.c_str(), x.title.c_str());
    if (x.id == "input_io") {
      head += " (explains the data loading time)";
    } else if (x.id != "environment") {  // environment: no measured time
      head += ": " + FmtDuration(x.time_lost_s);
      if (steps > 0) head += Printf(", %s/step", FmtDuration(x.time_lost_s / steps).c_str());
      head += Printf(", %.0f%%", 100 * x.share);
    }
    head += Printf("; rank%s %s", x.ranks.size() == 1 ? "" : "s", rk.c_str());
    Wrap(out, head, "     ", "  ");
    Wrap(out, x.summary, "      ", "    ");
    Wrap(out, "fix: " + x.fix, "      ", "    ");
  }
  return out;
}

}  // namespace gpuwatch::collector::diag
