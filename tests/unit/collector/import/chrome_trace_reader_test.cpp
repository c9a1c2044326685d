// The streaming reader on small documents: both layouts, the fields the mapping reads,
// nesting it skips, and what it refuses.
#include <catch2/catch.hpp>

#include <sstream>
#include <vector>

#include "import/chrome_trace_reader.h"

using namespace gpuwatch::collector;

namespace {

struct Read {
  bool ok;
  std::string error;
  TraceHeader header;
  std::vector<TraceEvent> events;
};

Read ReadText(const std::string& text) {
  Read r;
  std::istringstream in(text);
  r.ok = ReadChromeTrace(in, [&](const TraceEvent& e) { r.events.push_back(e); }, &r.header, &r.error);
  return r;
}

}  // namespace

TEST_CASE("collector: import reader takes events, args and the header, skipping what it does not read") {
  const Read r = ReadText(R"({
    "schemaVersion": 1,
    "traceEvents": [
      {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10.5, "dur": 2,
       "args": {"correlation": 5, "stream": 7, "device": 1, "grid": [8, 2, 1], "block": [128, 1, 1],
                "registers per thread": 32, "shared memory": 1024, "nested": {"x": [1, {"y": 2}]},
                "Collective name": "allreduce", "In msg nelems": 100, "dtype": "Float"}},
      {"ph": "f", "id": 5, "cat": "ac2g", "name": "ac2g", "pid": "Spans", "tid": "t", "ts": 1},
      [1, 2, 3], 4
    ],
    "distributedInfo": {"rank": 3, "world_size": 8, "pg_config": [{"ranks": [0, 1]}]},
    "deviceProperties": [{"id": 0, "name": "NVIDIA A100", "totalGlobalMem": 42297524224, "numSms": 108}],
    "host_name": "node1"
  })");
  REQUIRE(r.ok);
  REQUIRE(r.events.size() == 2);
  const TraceEvent& k = r.events[0];
  CHECK(k.ph == "X");
  CHECK(k.cat == "kernel");
  CHECK(k.ts_ns == 10500);
  CHECK(k.dur_ns == 2000);
  CHECK(k.correlation == 5);
  CHECK(k.stream == 7);
  CHECK(k.device == 1);
  CHECK(k.grid[0] == 8);
  CHECK(k.grid[1] == 2);
  CHECK(k.block[0] == 128);
  CHECK(k.registers == 32);
  CHECK(k.shared_bytes == 1024);
  CHECK(k.collective == "allreduce");
  CHECK(k.in_nelems == 100);
  CHECK(k.dtype == "Float");
  CHECK(r.events[1].pid_is_name);
  CHECK(r.events[1].correlation == -1);  // fields of one event do not leak into the next
  CHECK(r.header.rank == 3);
  CHECK(r.header.world_size == 8);
  REQUIRE(r.header.devices.size() == 1);
  CHECK(r.header.devices[0].name == "NVIDIA A100");
  CHECK(r.header.devices[0].memory_bytes == 42297524224ull);
  CHECK(r.header.devices[0].sms == 108);
  CHECK(r.header.host == "node1");
}

TEST_CASE("collector: import reader leaves out-of-range numbers unread") {
  const Read r = ReadText(R"([{"ph": "X", "cat": "kernel", "ts": 1e300, "dur": -3,
                               "args": {"correlation": 2.2e79, "stream": -1e30, "bytes": 1.5e300}}])");
  REQUIRE(r.ok);
  REQUIRE(r.events.size() == 1);
  CHECK_FALSE(r.events[0].has_ts);
  CHECK_FALSE(r.events[0].has_dur);
  CHECK(r.events[0].correlation == -1);
  CHECK(r.events[0].stream == -1);
  CHECK_FALSE(r.events[0].has_bytes);
}

TEST_CASE("collector: import reader takes the JSON Array Format too") {
  const Read r = ReadText(R"([{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 1}])");
  REQUIRE(r.ok);
  REQUIRE(r.events.size() == 1);
  CHECK(r.events[0].name == "a");
}

TEST_CASE("collector: import reader refuses what is not JSON or not a trace, in one line") {
  Read r = ReadText("this is not json");
  CHECK_FALSE(r.ok);
  CHECK(r.error.find("not valid JSON") != std::string::npos);
  r = ReadText(R"({"traceEvents": [{"ph": "X", "ts": 1)");  // cut off
  CHECK_FALSE(r.ok);
  CHECK(r.error.find("not valid JSON") != std::string::npos);
  r = ReadText(R"({"metrics": {"loss": 0.1}, "epochs": [1, 2]})");  // another tool's JSON
  CHECK_FALSE(r.ok);
  CHECK(r.error.find("no traceEvents") != std::string::npos);
  CHECK(r.error.find('\n') == std::string::npos);
}
