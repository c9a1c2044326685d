// How the hooks bind: a program that probes for the CUDA runtime takes the path it takes
// without gpuwatch, and a runtime loaded later is found then.
#include <catch2/catch.hpp>

#include <filesystem>

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

TEST_CASE("binding: a library of the job's own keeps its functions (gpuwatch exports only its hooks)") {
  const BothRuns r = RunBoth("own_symbols", {Program("own_symbols")});
  INFO(Joined(Differences(r)));
  CHECK(r.plain.out == "EventId(7) = 71, NowNs() = 42\n");
  CHECK(Differences(r).empty());
}

TEST_CASE("binding: every exported wrapper, called with no CUDA library loaded, returns instead of jumping to 0") {
  const BothRuns r = RunBoth("call_every_export", {Program("call_every_export"), PreloadedLibrary(), GPUWATCH_EXPORTS_MAP});
  INFO(r.watched.out << r.watched.err);
  CHECK(r.watched.exit_code == 0);
  CHECK(r.watched.signal == 0);
  CHECK(r.watched.out.find("none jumped to 0") != std::string::npos);
}

TEST_CASE("nvtx: a process with NVTX and no CUDA starts nothing and sees NVTX's own answers") {
  const BothRuns r = RunBoth("nvtx_only", {Program("nvtx_only")});
  INFO(Joined(Differences(r)));
  CHECK(r.plain.out.find("push -2 -2 pop -2 -2 -2") != std::string::npos);  // NVTX with no tool
  CHECK(Differences(r).empty());
  CHECK_FALSE(std::filesystem::exists(r.out_dir));   // no outputs
  // No collector started: its socket folder was never made, or holds nothing.
  CHECK((!std::filesystem::exists(r.sock_dir) || std::filesystem::is_empty(r.sock_dir)));
}

TEST_CASE("nvtx: with CUDA, NVTX's answers are the same as without gpuwatch") {
  const BothRuns r = RunBoth("nvtx_cuda", {Program("nvtx_only"), std::string(kSimLibs) + "/libcudart.so.13"});
  INFO(Joined(Differences(r)));
  CHECK(r.plain.exit_code == 0);
  CHECK(Differences(r).empty());
}
