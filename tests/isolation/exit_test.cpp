// Exits that happen while the job's threads are inside CUDA calls.
#include <catch2/catch.hpp>

#include "same_behaviour.h"

using namespace gpuwatch::isolation;

TEST_CASE("exit: exit() while other threads are inside CUDA calls ends the same way, every time") {
  int crashed = 0;
  for (int i = 0; i < 10; ++i) {
    const BothRuns r = RunBoth("exit_race", {Program("exit_race"), "4"}, {{"LD_LIBRARY_PATH", kSimLibs}});
    INFO("run " << i << ": plain " << r.plain.exit_code << "/" << r.plain.signal << ", watched "
                << r.watched.exit_code << "/" << r.watched.signal << "\n" << r.watched.err);
    REQUIRE(r.plain.exit_code == 0);
    if (r.watched.exit_code != 0 || r.watched.out != r.plain.out) ++crashed;
  }
  CHECK(crashed == 0);
}
