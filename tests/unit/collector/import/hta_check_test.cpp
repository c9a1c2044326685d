// gpuwatch's interpretation of the three real traces against HTA's own figures
// (tests/data/kineto/hta_expected.json, computed with HTA by hta_expected.py): HTA's
// quantities, computed by HTA's rules (hta_rules.h) over the device work, launching calls
// and steps that gpuwatch's interpret stage produced, equal HTA's output: the idle breakdown
// per stream and the temporal breakdown within 1% (of the stream's idle time, of the span),
// comm/comp overlap within 1 point.
#include <catch2/catch.hpp>

#include <fstream>

#include "hta_rules.h"
#include "import_fixture.h"

using namespace gwtest;
using nlohmann::json;

namespace {

InterpretedRank Interpret(const std::string& name) {
  InterpretedRank rank;
  col::RankImportStats s;
  std::string error;
  INFO(error);
  REQUIRE(col::ImportRankTrace(KinetoTrace(name), col::RankImportOptions{}, rank, &s, &error));
  return rank;
}

json HtaExpected(const std::string& name) {
  std::ifstream f(KinetoTrace("hta_expected.json"));
  REQUIRE(f.good());
  return json::parse(f).at(name);
}

}  // namespace

TEST_CASE("collector: import of real traces agrees with HTA's idle, temporal and overlap figures") {
  for (const char* name : kRealTraces) {
    SECTION(name) {
      const json want = HtaExpected(name);
      const InterpretedRank rank = Interpret(name);
      const HtaView view = HtaViewOf(rank);

      const auto idle = HtaIdleByStream(view);
      REQUIRE(idle.size() == want["idle_time_breakdown_us"].size());
      for (const auto& [stream, cats] : want["idle_time_breakdown_us"].items()) {
        INFO("stream " << stream);
        const auto it = idle.find(static_cast<uint32_t>(std::stoul(stream)));
        REQUIRE(it != idle.end());
        double total = 0;
        for (const auto& [cat, us] : cats.items()) total += us.get<double>();
        const double tol = 0.01 * total;
        CHECK(it->second.host_wait == Approx(cats.value("host_wait", 0.0)).margin(tol));
        CHECK(it->second.kernel_wait == Approx(cats.value("kernel_wait", 0.0)).margin(tol));
        CHECK(it->second.other == Approx(cats.value("other", 0.0)).margin(tol));
      }

      const HtaTemporal t = HtaTemporalOf(view);
      const json& wt = want["temporal_breakdown_us"];
      const double tol = 0.01 * wt["span"].get<double>();
      CHECK(t.span == Approx(wt["span"].get<double>()).margin(tol));
      CHECK(t.idle == Approx(wt["idle"].get<double>()).margin(tol));
      CHECK(t.compute == Approx(wt["compute"].get<double>()).margin(tol));
      CHECK(t.non_compute == Approx(wt["non_compute"].get<double>()).margin(tol));

      const double overlap = HtaCommCompOverlapPct(view);
      if (want["comm_comp_overlap_pctg"].is_null()) {
        CHECK(std::isnan(overlap));
      } else {
        CHECK(overlap == Approx(want["comm_comp_overlap_pctg"].get<double>()).margin(1.0));
      }
    }
  }
}
