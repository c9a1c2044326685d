// How the hooks bind: a program that probes for the CUDA runtime takes the path it takes
// without gpuwatch, and a runtime loaded later is found then.
#include <catch2/catch.hpp>

#include "same_behaviour.h"

using namespace gpuwatch::isolation;

namespace {
std::string Joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}
}  // namespace

TEST_CASE("binding: a program probing for the runtime takes the CPU path, as without gpuwatch") {
  const BothRuns r = RunBoth("weak_probe", {Program("weak_probe")});
  INFO(Joined(Differences(r)));
  CHECK(r.plain.out.find("CPU path") != std::string::npos);
  CHECK(Differences(r).empty());
}

TEST_CASE("binding: a runtime dlopen'ed after start-up is found then (the simulator's and the toolkit's)") {
  for (const std::string dir : {kSimLibs, kCudaLibs}) {
    const BothRuns r = RunBoth("weak_probe_dlopen", {Program("weak_probe"), dir + "/libcudart.so.13"});
    INFO(dir << "\n" << Joined(Differences(r)));
    CHECK(r.plain.out.find("after dlopen, cudaMemGetInfo: found") != std::string::npos);
    CHECK(Differences(r).empty());
  }
}
