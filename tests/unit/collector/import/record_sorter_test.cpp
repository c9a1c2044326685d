// The external merge sort: records spilled in runs come back in the order an in-memory
// sort gives.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <vector>

#include "import/record_sorter.h"

using namespace gpuwatch::collector;

TEST_CASE("collector: import sorter merges runs spilled to disk into time order") {
  std::mt19937_64 rng(7);
  std::vector<ImportRecord> in;
  for (uint64_t i = 0; i < 5000; ++i) {
    ImportRecord r;
    r.t_ns = rng() % 1000;  // many equal times: ties keep the file's order
    r.order = i;
    r.bytes = i;
    in.push_back(r);
  }
  for (size_t cap : {size_t{7}, size_t{1000}, size_t{100000}}) {
    RecordSorter sorter(cap);
    std::string error;
    for (const ImportRecord& r : in) REQUIRE(sorter.Add(r, &error));
    std::vector<ImportRecord> out;
    REQUIRE(sorter.Drain([&](const ImportRecord& r) { out.push_back(r); }, &error));
    CHECK(error.empty());
    CHECK(sorter.runs() == (cap < in.size() ? (in.size() + cap - 1) / cap : 0));
    std::vector<ImportRecord> want = in;
    std::sort(want.begin(), want.end());
    REQUIRE(out.size() == want.size());
    bool same = true;
    for (size_t i = 0; i < out.size(); ++i) same = same && out[i].order == want[i].order && out[i].t_ns == want[i].t_ns;
    CHECK(same);
  }
}
