// The --fail-if rules: what parses (the three forms and ours), what is refused
// with one line, and when each trips; a message names the rule and the figures.
#include <catch2/catch.hpp>

#include "compare/diff_gate.h"
#include "summaries.h"

using namespace gpuwatch::collector::compare;
using gwdiff::AddFinding;
using gwdiff::Doc;
using nlohmann::json;

namespace {

GateRule Rule(const std::string& text) {
  GateRule r;
  std::string error;
  INFO(text);
  REQUIRE(ParseRule(text, &r, &error));
  return r;
}

std::string ParseError(const std::string& text) {
  GateRule r;
  std::string error;
  INFO(text);
  CHECK_FALSE(ParseRule(text, &r, &error));
  CHECK(error.find('\n') == std::string::npos);
  return error;
}

RuleResult Check(const json& a, const json& b, const std::string& rule) {
  const SummaryDiff d = CompareRuns(ExtractFigures(a, "a"), ExtractFigures(b, "b"));
  return CheckRules(d, {Rule(rule)}).at(0);
}

}  // namespace

TEST_CASE("collector: gate rules parse") {
  GateRule r = Rule("step_time>+5%");
  CHECK(r.metric == "step_time");
  CHECK(r.op == '>');
  CHECK(r.change);
  CHECK(r.percent);
  CHECK(r.limit == 5);
  r = Rule("finding:sync_stall>1ms/step");
  CHECK(r.metric == "finding");
  CHECK(r.arg == "sync_stall");
  CHECK_FALSE(r.change);
  CHECK_FALSE(r.percent);
  CHECK(r.limit == 1);
  r = Rule("new-finding:high");
  CHECK(r.metric == "new-finding");
  CHECK(r.arg == "high");
  r = Rule("step_time>+2ms");
  CHECK((r.change && !r.percent && r.limit == 2));
  CHECK(Rule("step_time>1500us").limit == 1.5);
  CHECK(Rule("step_time>0.5s").limit == 500);
  r = Rule("gpu_busy<-5%");
  CHECK((r.op == '<' && r.change && r.percent && r.limit == -5));
  CHECK_FALSE(Rule("gpu_busy<80%").change);
  CHECK(Rule("finding:communication>+50%").percent);
  CHECK(Rule("finding:communication>10%").percent);
  CHECK(Rule("step_p90>+10%").metric == "step_p90");
  CHECK(Rule("new-finding:any").arg == "any");
}

TEST_CASE("collector: gate refuses a bad rule with one line") {
  CHECK_THAT(ParseError("step_time"), Catch::Contains("no comparison"));
  CHECK_THAT(ParseError("speed>+5%"), Catch::Contains("unknown figure 'speed'"));
  CHECK_THAT(ParseError("step_time>+5"), Catch::Contains("unknown unit ''"));
  CHECK_THAT(ParseError("step_time>+5parsecs"), Catch::Contains("unknown unit 'parsecs'"));
  CHECK_THAT(ParseError("step_time>5%"), Catch::Contains("write it with its sign (step_time>+5%)"));
  CHECK_THAT(ParseError("step_time>"), Catch::Contains("no limit"));
  CHECK_THAT(ParseError("step_time>abc"), Catch::Contains("expected a number"));
  CHECK_THAT(ParseError("gpu_busy<-5ms"), Catch::Contains("gpu_busy takes a % limit"));
  CHECK_THAT(ParseError("finding>1ms"), Catch::Contains("expected finding:ID"));
  CHECK_THAT(ParseError("step_time:x>1ms"), Catch::Contains("takes no ':'"));
  CHECK_THAT(ParseError("new-finding:critical"), Catch::Contains("high, medium, low or any"));
  CHECK_THAT(ParseError("speed>+5%"), Catch::StartsWith("--fail-if 'speed>+5%': "));
}

TEST_CASE("collector: gate step time rules") {
  json a = Doc(), b = Doc();
  gwdiff::SetStepMedian(b, 21.2);  // +6%
  RuleResult r = Check(a, b, "step_time>+5%");
  CHECK(r.tripped);
  CHECK(r.checked);
  CHECK(r.message == "step_time>+5%: tripped: step time median 20.00 -> 21.20 ms, +6.0% (limit >+5%)");
  CHECK_FALSE(Check(a, b, "step_time>+7%").tripped);
  CHECK(Check(a, b, "step_time>+1ms").tripped);
  CHECK_FALSE(Check(a, b, "step_time>+2ms").tripped);
  CHECK(Check(a, b, "step_time>21ms").tripped);
  CHECK(Check(b, a, "step_time<-5%").tripped);  // faster
  CHECK_FALSE(Check(a, a, "step_time>+0%").tripped);
  CHECK_FALSE(Check(a, b, "step_p90>+5%").tripped);  // p90 did not move
}

TEST_CASE("collector: gate finding rules read time per step, absent is 0") {
  json a = Doc(), b = Doc();
  CHECK_FALSE(Check(a, b, "finding:sync_stall>1ms/step").tripped);
  AddFinding(b, "sync_stall", "high", 1.5);
  RuleResult r = Check(a, b, "finding:sync_stall>1ms/step");
  CHECK(r.tripped);
  CHECK(r.message == "finding:sync_stall>1ms/step: tripped: sync_stall 0.00 -> 1.50 ms/step, 1.50 ms/step (limit >1 ms)");
  CHECK(Check(a, b, "finding:sync_stall>+1ms").tripped);
  CHECK(Check(a, b, "finding:sync_stall>+50%").tripped);  // from nothing: +inf
  CHECK_FALSE(Check(a, b, "finding:sync_stall>2ms").tripped);
  CHECK(Check(a, b, "finding:sync_stall>5%").tripped);  // share of the time: 7.5%
  CHECK_FALSE(Check(a, b, "finding:sync_stall>10%").tripped);
  json c = Doc();
  AddFinding(c, "sync_stall", "high", 1.2);
  CHECK(Check(c, b, "finding:sync_stall>+20%").tripped);  // +25%
  CHECK_FALSE(Check(c, b, "finding:sync_stall>+30%").tripped);
}

TEST_CASE("collector: gate new-finding rules weigh severity") {
  json a = Doc(), b = Doc();
  AddFinding(a, "communication", "high", 9.0);
  AddFinding(b, "communication", "high", 9.0);
  AddFinding(b, "straggler", "medium", 2.0);
  CHECK_FALSE(Check(a, b, "new-finding:high").tripped);
  RuleResult r = Check(a, b, "new-finding:medium");
  CHECK(r.tripped);
  CHECK(r.message == "new-finding:medium: tripped: new finding(s) straggler [medium] 2.00 ms/step");
  CHECK(Check(a, b, "new-finding:low").tripped);
  CHECK(Check(a, a, "new-finding:any").message == "new-finding:any: ok: no new finding of severity any or higher");
}

TEST_CASE("collector: gate GPU busy rules are in points") {
  json a = Doc(), b = Doc();
  b["job"]["gpu"]["utilization"] = 0.72;
  RuleResult r = Check(a, b, "gpu_busy<-5%");
  CHECK(r.tripped);
  CHECK(r.message == "gpu_busy<-5%: tripped: GPU busy 80.00 -> 72.00 %, -8.00 points (limit <-5%)");
  CHECK_FALSE(Check(a, b, "gpu_busy<-10%").tripped);
  CHECK(Check(a, b, "gpu_busy<75%").tripped);
}

TEST_CASE("collector: gate rules that cannot be checked trip") {
  json a = Doc(), b = Doc();
  b["job"]["steps"] = {{"count", 0}, {"source", "none"}, {"median_ms", 0}};
  RuleResult r = Check(a, b, "step_time>+5%");
  CHECK(r.tripped);
  CHECK_FALSE(r.checked);
  CHECK(r.message == "step_time>+5%: tripped: cannot be checked, the runs are not comparable");
  CHECK(Check(a, b, "finding:sync_stall>1ms/step").tripped);
  CHECK_FALSE(Check(a, b, "new-finding:high").tripped);  // presence needs no steps
  CHECK_FALSE(Check(a, b, "gpu_busy<-5%").tripped);
  json c = Doc();
  c["job"]["gpu"]["source"] = "events";
  CHECK_THAT(Check(a, c, "gpu_busy<-5%").message, Catch::Contains("a run has no device timeline"));
}

TEST_CASE("collector: gate help lists every metric") {
  const std::string h = RuleHelp();
  for (const char* m : {"step_time>+5%", "step_p90", "gpu_busy<-5%", "finding:sync_stall>1ms/step", "new-finding:high"})
    CHECK_THAT(h, Catch::Contains(m));
}
