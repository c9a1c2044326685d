// report.html in a real browser: a bundled scenario runs on the simulated GPU under
// LD_PRELOAD (autostarted collector), then headless Chromium (Debian's `chromium`, see
// scripts/setup.sh) loads OUT/report.html from disk. The DOM it builds must hold every
// chart with data for every rank of summary.json, and a screenshot must come out; at 1 and 8
// ranks, a probe script (in a copy of the page, since the page runs none) measures the
// rendered page: findings in words, a legend on every chart, a 4 KiB kernel name on one
// line. Without Chromium the test fails: a skipped browser check would pass a page nobody
// rendered.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "scenario_run.h"

namespace fs = std::filesystem;
using namespace gpuwatch::e2e;

namespace {

std::string FindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "");
  for (std::string dir; std::getline(ss, dir, ':');) {
    const std::string p = dir + "/" + name;
    if (!dir.empty() && access(p.c_str(), X_OK) == 0) return p;
  }
  return {};
}

// Headless Chromium with its own profile in `work`, killed (with its whole process group,
// by coreutils' timeout) after 60 s.
RunResult Chromium(const std::string& bin, const std::string& work,
                   const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"timeout", "--kill-after=5", "60", bin, "--headless",
                                   "--no-sandbox", "--disable-gpu", "--no-first-run",
                                   "--user-data-dir=" + work + "/chromium-profile"};
  argv.insert(argv.end(), args.begin(), args.end());
  return Run(argv, {{"HOME", work}, {"XDG_CONFIG_HOME", work + "/xdg"},
                    {"XDG_CACHE_HOME", work + "/xdg"}},
             75);
}

// Chromium logs D-Bus complaints on every start (no bus in a container): the end is enough.
std::string Tail(const std::string& s) { return s.size() > 800 ? s.substr(s.size() - 800) : s; }

// Start tags of a serialized DOM with their attributes (values as serialized).
struct Tag {
  std::string name;
  std::map<std::string, std::string> attrs;
};
std::vector<Tag> Tags(const std::string& dom) {
  std::vector<Tag> out;
  for (size_t i = dom.find('<'); i != std::string::npos; i = dom.find('<', i + 1)) {
    size_t j = i + 1;
    if (j >= dom.size() || !std::isalpha(static_cast<unsigned char>(dom[j]))) continue;
    Tag t;
    while (j < dom.size() && (std::isalnum(static_cast<unsigned char>(dom[j])) || dom[j] == '-'))
      t.name += dom[j++];
    while (j < dom.size() && dom[j] != '>') {
      if (std::isspace(static_cast<unsigned char>(dom[j])) || dom[j] == '/') {
        ++j;
        continue;
      }
      std::string key;
      while (j < dom.size() && dom[j] != '=' && dom[j] != '>' &&
             !std::isspace(static_cast<unsigned char>(dom[j])))
        key += dom[j++];
      std::string value;
      if (j < dom.size() && dom[j] == '=' && j + 1 < dom.size() && dom[j + 1] == '"') {
        const size_t end = dom.find('"', j + 2);
        if (end == std::string::npos) break;
        value = dom.substr(j + 2, end - j - 2);
        j = end + 1;
      }
      t.attrs[key] = value;
    }
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<const Tag*> Marks(const std::vector<Tag>& tags, const std::string& chart, int rank) {
  std::vector<const Tag*> out;
  for (const Tag& t : tags) {
    auto c = t.attrs.find("data-chart"), r = t.attrs.find("data-rank");
    if (c != t.attrs.end() && c->second == chart && r != t.attrs.end() &&
        r->second == std::to_string(rank))
      out.push_back(&t);
  }
  return out;
}

double Attr(const Tag* t, const std::string& key) {
  auto it = t->attrs.find(key);
  return it == t->attrs.end() ? -1 : std::atof(it->second.c_str());
}

// Runs in a copy of report.html (its CSP, which forbids scripts, taken out) and leaves what
// it measured as JSON in <pre id="probe">: for each shortened name (code.name) its rendered
// height against one line of the same style and its length; the findings' text outside
// names; for each chart whether a legend comes just before it; the Ranks table's devices.
const char* kProbe = R"js(
const one = document.createElement('code'); one.className = 'name'; one.textContent = 'x';
document.body.appendChild(one);
const line = one.getBoundingClientRect().height; one.remove();
const names = [...document.querySelectorAll('code.name')].map(e => ({
  lines: e.getBoundingClientRect().height / line, chars: [...e.textContent].length,
  full: e.title.length, kernel: !!e.closest('tr[data-kernel]'),
  row: e.closest('tr[data-kernel]') ? e.closest('tr').getBoundingClientRect().height / line : 0}));
const f = document.getElementById('findings').cloneNode(true);
f.querySelectorAll('code').forEach(c => c.remove());
const legends = [...document.querySelectorAll('svg')].map(s => {
  const p = s.previousElementSibling; return !!p && p.classList.contains('legend') && p.textContent.length > 0; });
const devices = [...document.querySelectorAll('td[data-device]')].map(e => e.textContent);
const pre = document.createElement('pre'); pre.id = 'probe';
pre.textContent = JSON.stringify({names, text: f.textContent, legends, devices});
document.body.appendChild(pre);
)js";

// The probe's JSON from a dumped DOM (its text escaped as HTML text is).
json Probe(const std::string& dom) {
  const size_t a = dom.find("<pre id=\"probe\">"), b = dom.find("</pre>", a);
  if (a == std::string::npos || b == std::string::npos) return nullptr;
  std::string t = dom.substr(a + 16, b - a - 16), out;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] != '&') { out += t[i]; continue; }
    for (const auto& [ent, ch] : {std::pair<const char*, char>{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}})
      if (t.compare(i, std::strlen(ent), ent) == 0) {
        out += ch;
        i += std::strlen(ent) - 1;
        break;
      }
  }
  return json::parse(out, nullptr, false);
}

// The page of `run`, probed in headless Chromium.
json ProbePage(const std::string& chromium, const JobRun& run) {
  std::string page = ReadFile(run.out + "/report.html");
  const size_t csp = page.find("<meta http-equiv=\"Content-Security-Policy\"");
  if (csp != std::string::npos) page.erase(csp, page.find('>', csp) + 1 - csp);
  page.insert(page.rfind("</body>"), std::string("<script>") + kProbe + "</script>");
  const std::string probed = run.work + "/probed.html";
  std::ofstream(probed) << page;
  const RunResult dom = Chromium(chromium, run.work, {"--dump-dom", "file://" + fs::absolute(probed).string()});
  INFO("chromium stderr (tail):\n" << Tail(dom.err));
  REQUIRE(dom.exit_code == 0);
  return Probe(dom.out);
}

// What every page must read like, whatever the job: findings in words (no evidence key, no
// JSON object), a legend on every chart, every name on one line and short, the devices.
void CheckReadable(const json& p, const json& summary) {
  REQUIRE(p.is_object());
  const std::string text = p["text"];
  INFO("findings text:\n" << text);
  CHECK(text.find('{') == std::string::npos);
  CHECK(text.find("(no frame)") == std::string::npos);
  for (const json& f : summary["job"]["findings"])
    for (auto it = f["evidence"].begin(); it != f["evidence"].end(); ++it)
      if (it.key().find('_') != std::string::npos) {
        INFO("evidence key " << it.key());
        CHECK(text.find(it.key()) == std::string::npos);
      }
  CHECK(p["legends"].size() >= 2);  // utilization and steps at least
  for (const json& l : p["legends"]) CHECK(l == true);
  CHECK(p["names"].size() > 0);
  for (const json& n : p["names"]) {
    INFO(n.dump());
    CHECK(n["lines"].get<double>() < 1.5);
    CHECK(n["chars"].get<int>() <= 80);
    if (n["kernel"] == true) CHECK(n["row"].get<double>() < 2.5);
  }
  const json& ranks = summary["ranks"];
  REQUIRE(p["devices"].size() == ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    const json& device = ranks[i]["device"];  // the ordinal, where the document has it
    CHECK(p["devices"][i] == (device.is_number_integer() ? std::to_string(device.get<int>()) : std::string("-")));
  }
}

}  // namespace

TEST_CASE("report.html: comm_bound renders in headless Chromium with data in every chart") {
  const std::string chromium = FindOnPath("chromium");
  if (chromium.empty())
    FAIL("headless Chromium is needed: apt-get install chromium (scripts/setup.sh)");

  const JobRun run = RunScenario("report-html", "comm_bound");
  INFO("driver stderr:\n" << run.job.err);
  REQUIRE(WaitForFile(run.out + "/report.html", 30));  // written after summary.json
  const json& summary = run.summary;
  const json& ranks = summary["ranks"];
  REQUIRE(ranks.size() == 2);

  const std::string url = "file://" + fs::absolute(run.out + "/report.html").string();
  const RunResult dom = Chromium(chromium, run.work, {"--dump-dom", url});
  INFO("chromium stderr (tail):\n" << Tail(dom.err));
  REQUIRE(dom.exit_code == 0);
  const std::vector<Tag> tags = Tags(dom.out);
  REQUIRE(!tags.empty());

  for (const json& r : ranks) {
    const int k = r["rank"];
    INFO("rank " << k);
    // Utilization: one line whose windows match summary.json's series, mostly busy > 0.
    const auto util = Marks(tags, "util", k);
    REQUIRE(util.size() == 1);
    const double points = Attr(util[0], "data-points");
    CHECK(points > 0);
    CHECK(points == static_cast<double>(r["gpu"]["utilization_series"]["busy"].size()));
    CHECK(Attr(util[0], "data-mean") > 0);
    // Step time: eight parts, compute and exposed communication drawn with their values.
    const auto steps = Marks(tags, "steps", k);
    REQUIRE(steps.size() == 8);
    std::map<std::string, double> part;
    for (const Tag* t : steps) part[t->attrs.at("data-part")] = Attr(t, "data-value");
    const json& per = r["steps"]["per_step_ms"];
    CHECK(part["gpu_compute"] > 0);
    CHECK(part["comm_not_overlapped"] > 0);
    CHECK(part["gpu_compute"] == Approx(per["gpu_compute"].get<double>()).epsilon(1e-4));
    CHECK(Marks(tags, "steps-marker", k).size() == 1);
    // Collectives: the all-reduce's busbw, as in summary.json.
    const auto bw = Marks(tags, "busbw", k);
    REQUIRE(bw.size() == 1);
    CHECK(bw[0]->attrs.at("data-op") == "allreduce");
    CHECK(Attr(bw[0], "data-value") ==
          Approx(r["collectives"]["allreduce"]["busbw_gbps"].get<double>()).epsilon(1e-4));
  }
  size_t kernel_rows = 0, finding = 0;
  const std::string top = summary["job"]["findings"][0]["id"];
  for (const Tag& t : tags) {
    kernel_rows += t.name == "tr" && t.attrs.count("data-kernel");
    finding += t.attrs.count("data-id") && t.attrs.at("data-id") == top;
  }
  CHECK(kernel_rows == summary["job"]["gpu"]["kernels"]["top"].size());
  CHECK(kernel_rows > 0);
  CHECK(finding == 1);
  CHECK(dom.out.find(summary["job"]["verdict"].get<std::string>().substr(0, 40)) !=
        std::string::npos);

  // The screenshot: a PNG, and not a blank page (a white 1280x2000 one is about 12 kB;
  // this page gives about 200 kB).
  const std::string png = run.work + "/report.png";
  const RunResult shot =
      Chromium(chromium, run.work, {"--screenshot=" + png, "--window-size=1280,2000", url});
  INFO("chromium stderr (tail):\n" << Tail(shot.err));
  CHECK(shot.exit_code == 0);
  REQUIRE(fs::exists(png));
  const std::string bytes = ReadFile(png);
  CHECK(bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0);
  CHECK(bytes.size() > 30000);
}

TEST_CASE("report.html: one rank reads in sentences, the cause of a loss inside it") {
  const std::string chromium = FindOnPath("chromium");
  if (chromium.empty()) FAIL("headless Chromium is needed: apt-get install chromium (scripts/setup.sh)");
  const JobRun run = RunScenario("report-html-1", "dataloader_bound");
  INFO("driver stderr:\n" << run.job.err);
  REQUIRE(WaitForFile(run.out + "/report.html", 30));
  const json& summary = run.summary;
  REQUIRE(summary["ranks"].size() == 1);
  CheckReadable(ProbePage(chromium, run), summary);
  // data_loading and input_io are one loss: one finding, its cause inside it.
  std::set<std::string> ids;
  for (const json& f : summary["job"]["findings"]) ids.insert(f["id"]);
  REQUIRE(ids.count("data_loading"));
  REQUIRE(ids.count("input_io"));
  const std::string page = ReadFile(run.out + "/report.html");
  CHECK(page.find("data-finding data-id=\"input_io\"") == std::string::npos);
  const size_t loss = page.find("data-finding data-id=\"data_loading\""), why = page.find("data-explains data-id=\"input_io\"");
  REQUIRE(loss != std::string::npos);
  REQUIRE(why != std::string::npos);
  CHECK(page.find("data-finding", loss + 1) > why);  // inside the data_loading card
}

TEST_CASE("report.html: a 4 KiB kernel name takes one line, the whole name on hover") {
  const std::string chromium = FindOnPath("chromium");
  if (chromium.empty()) FAIL("headless Chromium is needed: apt-get install chromium (scripts/setup.sh)");
  // CUTLASS's kernels carry their whole template in the name; the simulator's kernel has a
  // short one, so the kernel comes from a torch.profiler trace (gpuwatch import).
  const std::string type(4096, 'x');
  const std::string name = "_ZN7cutlass6KernelINS_4gemm6kernel13GemmUniversalIN7cutlass" + std::to_string(type.size()) +
                           type + "EEEEEvNT_6ParamsE";
  JobRun run;
  run.work = FreshDir("report-html-long");
  run.out = run.work + "/out";
  json events = json::array();
  for (int step = 0; step < 3; ++step) {
    const int t = 1000 + 400 * step;
    events.push_back({{"ph", "X"}, {"cat", "user_annotation"}, {"name", "ProfilerStep#" + std::to_string(step)},
                      {"pid", 5}, {"tid", 5}, {"ts", t}, {"dur", 400}});
    events.push_back({{"ph", "X"}, {"cat", "cuda_runtime"}, {"name", "cudaLaunchKernel"}, {"pid", 5}, {"tid", 5},
                      {"ts", t + 20}, {"dur", 10}, {"args", {{"correlation", 10 + step}}}});
    events.push_back({{"ph", "X"}, {"cat", "kernel"}, {"name", name}, {"pid", 0}, {"tid", "stream 7"}, {"ts", t + 40},
                      {"dur", 300}, {"args", {{"correlation", 10 + step}, {"stream", 7}, {"device", 0}}}});
  }
  const std::string trace = run.work + "/trace.json";
  std::ofstream(trace) << json{{"schemaVersion", 1}, {"traceEvents", events}}.dump();
  const RunResult imported = Run({GPUWATCH_BIN_DIR "/gpuwatch", "import", "-q", "-o", run.out, trace}, {}, 60);
  INFO("import stderr:\n" << imported.err);
  REQUIRE(imported.exit_code == 0);
  run.summary = json::parse(ReadFile(run.out + "/summary.json"));
  const json& top = run.summary["job"]["gpu"]["kernels"]["top"];
  REQUIRE(top.size() == 1);
  CHECK(top[0]["name"].get<std::string>().size() >= 4096);  // summary.json keeps the name (to 4 KiB)
  const json p = ProbePage(chromium, run);
  REQUIRE(p.is_object());
  size_t kernels = 0;
  for (const json& n : p["names"]) {
    if (n["kernel"] != true) continue;
    ++kernels;
    INFO(n.dump());
    CHECK(n["full"].get<size_t>() == top[0]["name"].get<std::string>().size());
    CHECK(n["chars"].get<int>() <= 80);
    CHECK(n["lines"].get<double>() < 1.5);
    CHECK(n["row"].get<double>() < 2.5);
  }
  CHECK(kernels == 1);
}

TEST_CASE("report.html: eight ranks with a straggler read in sentences") {
  const std::string chromium = FindOnPath("chromium");
  if (chromium.empty()) FAIL("headless Chromium is needed: apt-get install chromium (scripts/setup.sh)");
  json scenario = json::parse(ReadFile(std::string(GPUWATCH_SCENARIOS_DIR) + "/straggler.json"));
  scenario["ranks"] = 8;
  scenario["steps"] = 20;
  const JobRun run = RunScenario("report-html-8", scenario.dump());
  INFO("driver stderr:\n" << run.job.err);
  REQUIRE(WaitForFile(run.out + "/report.html", 30));
  REQUIRE(run.summary["ranks"].size() == 8);
  CHECK(!run.summary["job"]["findings"].empty());
  CheckReadable(ProbePage(chromium, run), run.summary);
}
