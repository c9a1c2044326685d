// report.html in a real browser: a bundled scenario runs on the simulated GPU under
// LD_PRELOAD (autostarted collector), then headless Chromium (Debian's `chromium`, see
// scripts/setup.sh) loads OUT/report.html from disk. The DOM it builds must hold every
// chart with data for every rank of summary.json, and a screenshot must come out. Without
// Chromium the test fails: a skipped browser check would pass a page nobody rendered.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <map>
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
