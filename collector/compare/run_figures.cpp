// See run_figures.h. Lookups go through common/json_read.h, so a partial document never
// throws here.
#include "compare/run_figures.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "common/format.h"
#include "common/json_read.h"

namespace gpuwatch::collector::compare {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

using json_read::Arr;
using json_read::Get;
using json_read::Num;
using json_read::Whole;
using json_read::Obj;
using json_read::Str;

// The median of the values the ranks gave (the upper one of an even count, as the job's
// step median is taken); 0 when none did.
double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Per-rank values of one figure, collected by key, then each key's median over the ranks
// that have steps (a rank without the key counts 0: the tables list what occurred).
class RankMedians {
 public:
  explicit RankMedians(size_t ranks) : ranks_(ranks) {}
  void Add(const std::string& key, size_t rank, double v) {
    auto& row = values_[key];
    row.resize(ranks_, 0.0);
    row[rank] += v;
  }
  std::map<std::string, double> Medians() const {
    std::map<std::string, double> out;
    for (const auto& [key, row] : values_) out[key] = Median(row);
    return out;
  }

 private:
  size_t ranks_;
  std::map<std::string, std::vector<double>> values_;
};

// "a, b" of the distinct values, sorted; "-" when none.
std::string Distinct(const std::set<std::string>& values) {
  std::string out;
  for (const std::string& v : values) out += (out.empty() ? "" : ", ") + v;
  return out.empty() ? "-" : out;
}

}  // namespace

namespace {

// "symbol+0x15a3 (lib)" -> "symbol (lib)", "lib+0x2724a" -> "lib": the offset moves with
// every rebuild.
std::string FrameWithoutOffset(std::string f) {
  const size_t plus = f.rfind("+0x");
  if (plus != std::string::npos) {
    size_t end = plus + 3;
    while (end < f.size() && std::isxdigit(static_cast<unsigned char>(f[end]))) ++end;
    f.erase(plus, end - plus);
  }
  return f;
}

// A frame dladdr named: "symbol+0x15a3 (lib)"; an unnamed one is "lib+0x15a3".
bool FrameNamed(const std::string& frame) { return frame.find(" (") != std::string::npos; }

}  // namespace

std::string CallSiteKey(const std::string& python, const std::vector<std::string>& frames) {
  if (!python.empty()) return python;
  if (frames.empty()) return "?";
  std::string key = FrameWithoutOffset(frames.front());
  if (FrameNamed(frames.front())) return key;
  // A function without a dynamic symbol (static, or inlined differently at -O3) is only
  // its library: the first named caller tells such sites apart.
  for (size_t i = 1; i < frames.size(); ++i)
    if (FrameNamed(frames[i])) return key + ", called from " + FrameWithoutOffset(frames[i]);
  return key;
}

RunFigures ExtractFigures(const json& s, const std::string& path) {
  RunFigures f;
  f.path = path;
  f.job_id = Str(s, "job_id");
  f.generated_at = Str(s, "generated_at");
  const json& job = Obj(s, "job");
  const json& ranks = Arr(s, "ranks");
  f.ranks = Whole<int>(job, "ranks", static_cast<int>(ranks.size()));
  f.world_size = Whole<int>(job, "world_size");
  f.hosts = Whole<int>(job, "hosts");
  for (const json& r : Arr(job, "abnormal_ranks"))
    if (r.is_number_integer()) f.abnormal_ranks.push_back(r.get<int>());

  const json& steps = Obj(job, "steps");
  f.steps_source = Str(steps, "source", "none");
  f.steps = Whole<uint64_t>(steps, "count");
  f.step_median_ms = Num(steps, "median_ms");

  const json& critical = Obj(job, "critical_path");
  if (Num(critical, "steps") > 0) {
    f.path_step_ms = Num(critical, "step_ms");
    for (const auto& [key, v] : Obj(critical, "parts").items())
      if (v.is_number() && EndsWith(key, "_ms")) f.path_parts[key.substr(0, key.size() - 3)] = v.get<double>();
  }
  const json& all = Obj(job, "what_if_all");
  if (Num(all, "step_ms") > 0) {
    f.all_fixed_step_ms = Num(all, "step_ms");
    f.all_fixed_then = Str(all, "then_paced_by");
  }

  const json& gpu = Obj(job, "gpu");
  f.gpu_source = Str(gpu, "source", "events");
  if (f.gpu_source == "cupti" && Get(gpu, "utilization").is_number())
    f.gpu_busy = Num(gpu, "utilization");

  const double job_steps = static_cast<double>(f.steps);
  for (const json& x : Arr(job, "findings")) {
    FindingFigures g;
    g.id = Str(x, "id");
    if (g.id.empty()) continue;
    g.title = Str(x, "title", g.id);
    g.severity = Str(x, "severity", "low");
    g.summary = Str(x, "summary");
    g.fix = Str(x, "fix");
    g.ms_per_step = job_steps > 0 ? Num(x, "time_lost_s") * 1e3 / job_steps : 0;
    g.share = Num(x, "share");
    for (const json& r : Arr(x, "ranks"))
      if (r.is_number_integer()) g.ranks.push_back(r.get<int>());
    f.findings.push_back(std::move(g));
  }

  // Per rank, per step; then the median over the ranks that have steps.
  std::vector<const json*> stepped;
  for (const json& r : ranks)
    if (Num(Obj(r, "steps"), "count") > 0) stepped.push_back(&r);
  RankMedians parts(stepped.size()), sync_calls(stepped.size()), sync_ms(stepped.size()),
      copy(stepped.size()), coll(stepped.size()), launches(stepped.size()), p90(stepped.size());
  for (size_t i = 0; i < stepped.size(); ++i) {
    const json& r = *stepped[i];
    const double n = Num(Obj(r, "steps"), "count");
    p90.Add("p90", i, Num(Obj(r, "steps"), "p90_ms"));
    for (const auto& [part, v] : Obj(Obj(r, "steps"), "per_step_ms").items())
      if (v.is_number()) parts.Add(part, i, v.get<double>());
    for (const auto& [api, v] : Obj(Obj(r, "sync"), "by_api").items()) {
      sync_calls.Add(api, i, Num(v, "count") / n);
      sync_ms.Add(api, i, Num(v, "total_s") * 1e3 / n);
    }
    for (const char* dir : {"h2d", "d2h"}) {
      const json& c = Obj(Obj(r, "memcpy"), dir);
      const std::string d = dir;
      copy.Add(d + ".calls", i, Num(c, "count") / n);
      copy.Add(d + ".mb", i, Num(c, "bytes") / 1e6 / n);
      copy.Add(d + ".host_ms", i, Num(c, "total_s") * 1e3 / n);
      copy.Add(d + ".pageable", i, Num(c, "pageable_count") / n);
      copy.Add(d + ".blocking", i, Num(c, "blocking_count") / n);
    }
    for (const auto& [op, v] : Obj(r, "collectives").items()) {
      if (op == "by_comm") continue;  // per communicator, not an op
      coll.Add(op + ".calls", i, Num(v, "count") / n);
      coll.Add(op + ".gpu_ms", i, Num(v, "total_s") * 1e3 / n);
    }
    launches.Add("launches", i, Num(Obj(r, "kernels"), "launches") / n);
  }
  f.step_p90_ms = stepped.empty() ? 0 : p90.Medians()["p90"];
  f.step_parts = parts.Medians();
  const auto calls = sync_calls.Medians(), blocked = sync_ms.Medians();
  for (const auto& [api, v] : calls) f.sync[api] = {v, blocked.at(api)};
  const auto copies = copy.Medians();
  for (const char* dir : {"h2d", "d2h"}) {
    const std::string d = dir;
    const json& c = Obj(Obj(job, "memcpy"), dir);
    CopyFigures& g = f.copies[d];
    if (copies.count(d + ".calls")) {
      g.calls_per_step = copies.at(d + ".calls");
      g.mb_per_step = copies.at(d + ".mb");
      g.host_ms_per_step = copies.at(d + ".host_ms");
      g.pageable_per_step = copies.at(d + ".pageable");
      g.blocking_per_step = copies.at(d + ".blocking");
    }
    const double bytes = Num(c, "bytes");
    g.pageable_share = bytes > 0 ? Num(c, "pageable_bytes") / bytes : 0;
    if (Get(c, "device_gbps").is_number()) g.device_gbps = Num(c, "device_gbps");
  }
  const auto colls = coll.Medians();
  for (const auto& [op, v] : Obj(job, "collectives").items()) {
    if (op == "by_comm") continue;
    CollectiveFigures& g = f.collectives[op];
    if (colls.count(op + ".calls")) {
      g.calls_per_step = colls.at(op + ".calls");
      g.gpu_ms_per_step = colls.at(op + ".gpu_ms");
    }
    g.busbw_gbps = Num(v, "busbw_gbps");
  }
  f.launches_per_step = stepped.empty() ? 0 : launches.Medians()["launches"];

  // Kernels: the job's top list (merged by name over ranks) per step and per rank with a
  // device timeline. The ranks' own lists are cut at 10 each, so a median over them would
  // miss names; the job's is the mean rank.
  int cupti_ranks = 0;
  for (const json& r : ranks)
    if (Str(Obj(r, "gpu"), "source") == "cupti") ++cupti_ranks;
  const json& top = Arr(Obj(gpu, "kernels"), "top");
  f.kernels_cut = top.size() >= 10;
  if (cupti_ranks > 0 && job_steps > 0)
    for (const json& k : top) {
      const std::string name = Str(k, "name");
      if (name.empty()) continue;
      f.kernels[name] = {Num(k, "total_s") * 1e3 / cupti_ranks / job_steps,
                         Num(k, "count") / cupti_ranks / job_steps};
    }

  // Call sites of sync stalls: each rank names the one that blocked longest; a site seen
  // on several ranks keeps the figures of the rank where it blocked most per step.
  for (const json& r : ranks) {
    const double n = Num(Obj(r, "steps"), "count");
    if (n <= 0) continue;
    for (const json& x : Arr(r, "findings")) {
      if (Str(x, "id") != "sync_stall") continue;
      const json& site = Get(Obj(x, "evidence"), "call_site");
      if (!site.is_object()) continue;
      CallSiteFigures c;
      c.python = Str(site, "python");
      for (const json& fr : Arr(site, "frames"))
        if (fr.is_string()) c.frames.push_back(fr.get<std::string>());
      c.blocked_ms_per_step = Num(site, "blocked_s") * 1e3 / n;
      c.calls_per_step = Num(site, "calls") / n;
      const std::string key = CallSiteKey(c.python, c.frames);
      auto it = f.call_sites.find(key);
      if (it == f.call_sites.end() || it->second.blocked_ms_per_step < c.blocked_ms_per_step)
        f.call_sites[key] = std::move(c);
    }
  }

  // Environment: what could make the same code run differently.
  std::map<std::string, std::set<std::string>> env;
  std::map<std::string, std::set<int>> devices;
  for (const json& r : ranks) {
    const json& e = Get(r, "environment");
    auto version = [&](const char* key, const char* what) {
      const std::string v = Str(e, key);
      env[what].insert(v.empty() ? "unknown" : v);
    };
    version("cuda_runtime", "CUDA runtime");
    version("cuda_driver", "CUDA driver");
    version("nccl", "NCCL");
    for (const auto& [name, value] : Obj(e, "settings").items())
      env[name].insert(value.is_string() ? value.get<std::string>() : value.dump());
    const std::string lib = Str(r, "library_version");
    if (!lib.empty()) env["gpuwatch library"].insert(lib);
    if (Get(r, "device").is_number_integer())
      devices[Str(r, "host", "?")].insert(Get(r, "device").get<int>());
  }
  for (const auto& [what, values] : env) f.environment[what] = Distinct(values);
  // Settings that some ranks had and others not: say "unset" for the others.
  for (const auto& [what, values] : env) {
    if (what.rfind("NCCL_", 0) != 0 && what != "CUDA_LAUNCH_BLOCKING") continue;
    size_t with = 0;
    for (const json& r : ranks)
      if (Get(Obj(Get(r, "environment"), "settings"), what.c_str()).is_string()) ++with;
    if (with < ranks.size()) f.environment[what] = Distinct(values) + " (unset on some ranks)";
  }
  f.environment["world size"] = std::to_string(f.world_size);
  f.environment["ranks"] = std::to_string(f.ranks);
  f.environment["hosts"] = std::to_string(f.hosts);
  std::string dev;
  for (const auto& [host, ids] : devices) {
    std::string list;
    for (int d : ids) list += (list.empty() ? "" : ",") + std::to_string(d);
    dev += (dev.empty() ? "" : "; ") + host + ": " + list;
  }
  f.environment["devices"] = dev.empty() ? "-" : dev;
  f.environment["GPU timeline"] = f.gpu_source;
  return f;
}

bool LoadSummary(const std::string& path, json* summary, std::string* error) {
  std::error_code ec;
  std::string file = path;
  if (fs::is_directory(path, ec)) {
    file = (fs::path(path) / "summary.json").string();
    if (!fs::exists(file, ec)) {
      *error = path + ": no summary.json in this folder (a gpuwatch output folder has one once "
                      "the job ended; 'gpuwatch report " + path + "' rebuilds it from the journals)";
      return false;
    }
  } else if (!fs::exists(path, ec)) {
    *error = path + ": no such file or folder";
    return false;
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    *error = file + ": cannot read it";
    return false;
  }
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    *error = file + ": cannot read it";
    return false;
  }
  const std::string body = text.str();
  if (body.find_first_not_of(" \t\r\n") == std::string::npos) {
    *error = file + ": empty file, not a summary";
    return false;
  }
  try {
    *summary = json::parse(body);
  } catch (const json::parse_error& e) {
    // "at line 3, column 5" / "unexpected end of input": a truncated file says so.
    std::string what = e.what();
    const bool truncated = e.byte >= body.size();
    *error = file + (truncated ? ": truncated (the JSON ends early at byte " +
                                     std::to_string(body.size()) + ")"
                               : ": not valid JSON (" + what + ")");
    for (char& c : *error)
      if (c == '\n' || c == '\r') c = ' ';
    return false;
  }
  if (!summary->is_object()) {
    *error = file + ": not a gpuwatch summary (the JSON is not an object)";
    return false;
  }
  const json& schema = Get(*summary, "schema");
  if (!schema.is_string()) {
    *error = file + ": not a gpuwatch summary (no \"schema\" key)";
    return false;
  }
  if (schema.get<std::string>() != kSummarySchema) {
    *error = file + ": schema \"" + Clip(schema.get<std::string>(), 60) + "\", this gpuwatch reads \"" +
             kSummarySchema + "\"";
    return false;
  }
  if (!Get(*summary, "job").is_object() || !Get(*summary, "ranks").is_array()) {
    *error = file + ": incomplete summary (\"job\" or \"ranks\" missing)";
    return false;
  }
  return true;
}

}  // namespace gpuwatch::collector::compare
