// Two files of one job become one job with both ranks, their collectives matched across
// the files by communicator (the process group's name and members) and sequence number.
// Rank 1's file is rank 0's with distributedInfo.rank set to 1: two ranks that ran alike.
#include <catch2/catch.hpp>

#include <zlib.h>

#include "import_fixture.h"
#include "procs.h"

using namespace gwtest;
using nlohmann::json;

namespace {

std::string Gunzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  std::string out;
  char buf[1 << 16];
  for (int n; (n = gzread(f, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}

}  // namespace

TEST_CASE("collector: import joins two ranks' files into one job, collectives matched by communicator") {
  TempDir tmp;
  std::string text = Gunzip(KinetoTrace("nccl_data_a100_rank0.json.gz"));
  const std::string from = R"("distributedInfo": {"backend": "nccl", "rank": 0,)";
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), R"("distributedInfo": {"backend": "nccl", "rank": 1,)");
  const std::string rank1 = tmp.path + "/rank1.json";
  std::ofstream(rank1, std::ios::binary) << text;

  // Given in the other order: the ranks come from distributedInfo, not the order.
  const Imported got = ImportTraces({rank1, KinetoTrace("nccl_data_a100_rank0.json.gz")});
  const json& s = got.summary;
  REQUIRE(s["ranks"].size() == 2);
  CHECK(s["ranks"][0]["rank"] == 0);
  CHECK(s["ranks"][1]["rank"] == 1);
  CHECK(s["job"]["world_size"] == 2);
  const json want = ExpectedCounts("nccl_data_a100_rank0.json.gz");
  const json& comms = s["job"]["collectives"]["by_comm"];
  REQUIRE(comms.size() == 1);  // one process group, the same id in both files
  CHECK(comms[0]["members"] == json::array({0, 1}));
  CHECK(comms[0]["ranks_reporting"] == 2);
  CHECK(comms[0]["kind"] == "world");
  CHECK(comms[0]["identified"] == true);
  CHECK(comms[0]["kernels"] == 2 * want["nccl_kernels"].get<int>());
  for (int r = 0; r < 2; ++r) {
    CHECK(s["ranks"][r]["collectives"]["by_comm"][0]["rank_in_comm"] == r);
    CHECK(s["ranks"][r]["gpu"]["comm_kernels"]["count"] == want["nccl_kernels"]);
  }
  // Ranks that ran alike: no straggler among them.
  for (const json& f : s["job"]["findings"]) CHECK(f["id"] != "straggler");
}
