// The simulated CUPTI (libcupti.so.13): an nvcc-built program enables activity records and
// checks each one itself (sim_cupti_probe); these tests run it in its three modes.
#include <catch2/catch.hpp>

#include <cupti.h>
#include <dlfcn.h>
#include <nccl.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "simgpu.h"

#include "support.h"

using namespace simtest;

namespace {
std::map<std::string, std::string> sim_env() { return {{"LD_LIBRARY_PATH", SIM_DIR}}; }
}  // namespace

TEST_CASE("sim: CUPTI records every kernel, copy, memset and API call the model executed", "[sim]") {
  Result r = run({SIM_CUPTI_PROBE, "records"}, sim_env());
  INFO(r.out << r.err);
  CHECK(r.out.find("FAIL") == std::string::npos);
  REQUIRE(r.status == 0);
  auto kv = parse_kv(r.out);
  CHECK(kv["kernels"] == 6);
  CHECK(kv["copies"] == 3);
  CHECK(kv["memsets"] == 1);
  CHECK(kv["runtime_api"] == 9);
  CHECK(kv["driver_api"] == 2);
}

TEST_CASE("sim: CUPTI records carry the configured clock offset", "[sim]") {
  auto env = sim_env();
  env["SIMGPU_CUPTI_CLOCK_OFFSET_NS"] = "7000000000000";
  Result r = run({SIM_CUPTI_PROBE, "records"}, env);
  INFO(r.out << r.err);
  CHECK(r.out.find("FAIL") == std::string::npos);
  CHECK(r.status == 0);
}

TEST_CASE("sim: CUPTI records the API calls chosen one by one, and every call while their kind is on", "[sim]") {
  // cuptiActivityEnableRuntimeApi (CUPTI 12+): three launches each checked with
  // cudaGetLastError, and a memset; the launches chosen, then the whole kind, then none.
  Result r = run({SIM_CUPTI_PROBE, "choice"}, sim_env());
  INFO(r.out << r.err);
  CHECK(r.out.find("FAIL") == std::string::npos);
  REQUIRE(r.status == 0);
  auto kv = parse_kv(r.out);
  CHECK(kv["chosen_launch"] == 3);
  CHECK(kv["chosen_check"] == 0);
  CHECK(kv["chosen_memset"] == 0);
  CHECK(kv["kind_launch"] == 6);
  CHECK(kv["kind_check"] == 3);
  CHECK(kv["kind_memset"] == 1);
  CHECK(kv["off_launch"] == 6);  // nothing more
  CHECK(kv["off_check"] == 3);
  CHECK(kv["off_memset"] == 1);
}

TEST_CASE("sim: CUPTI held by another profiler refuses cuptiSubscribe", "[sim]") {
  auto env = sim_env();
  env.emplace("SIMGPU_CUPTI_TAKEN", "1");  // (emplace: GCC 12 warns falsely on assigning a 1-char literal)
  Result r = run({SIM_CUPTI_PROBE, "taken"}, env);
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("subscribe_name=CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED") != std::string::npos);
}

TEST_CASE("sim: CUPTI costs each launch what NVIDIA's does while a kind is enabled, and part of it until cuptiFinalize", "[sim]") {
  auto env = sim_env();
  env["SIMGPU_CONFIG"] = "launch_us=0,default_kernel_us=0";
  Result r = run({SIM_CUPTI_PROBE, "cost"}, env);
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  auto kv = parse_kv(r.out);
  // Fastest rounds. NVIDIA's CUPTI adds 2.5-3 us per launch on an H200 with every kind on;
  // here the configured cost plus the simulator's own handling of the records (~0.9 us on
  // the 2-core development VM), with room for a slower machine.
  // CUPTI off: before it was subscribed and after cuptiFinalize alike. The lower of the two:
  // one process read `off` at 624 ns and `finalized` at 409, another 382 and ~400, and an
  // inflated `off` shrank every difference below.
  const double base = std::min(kv["off_ns"], kv["finalized_ns"]);
  const double device = kv["device_ns"] - base, all = kv["all_ns"] - base;
  CHECK(device >= 1700);  // SIMGPU_CUPTI_LAUNCH_COST_NS: a floor
  CHECK(all >= 2200);     // + SIMGPU_CUPTI_API_COST_NS (500): the configured costs, spun
  CHECK(all <= 4000);
  CHECK(kv["hw_trace"] == 0);  // as on the H200: Blackwell only
  // Disabled again: not free, as on the H200 (SIMGPU_CUPTI_LINGER_COST_NS, 600 ns), until
  // cuptiFinalize detaches CUPTI. Half of it asked for: preemption eats into spun costs.
  CHECK(kv["off_again_ns"] - base >= 300);
  CHECK(kv["off_again_ns"] - base <= 1500);
  // Finalized: the linger is gone. Under half of it left: a busy machine's noise (261 ns
  // above off measured with the suite running beside it) stays under that.
  CHECK(std::abs(kv["finalized_ns"] - kv["off_ns"]) < 300);

  env.emplace("SIMGPU_CUPTI_HWTRACE", "1");
  r = run({SIM_CUPTI_PROBE, "cost"}, env);
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  kv = parse_kv(r.out);
  CHECK(kv["hw_trace"] == 1);
  // 200 instead of 1700 per launch: 1500 ns less as configured. The simulator spends these
  // costs spinning, and preemption on a loaded 2-core VM (ctest -j2) ate up to 800 ns of
  // the difference (CI: 3366 vs 2683 ns), so the check asks for a fifth of it: far
  // above the fastest rounds' run-to-run spread (~100 ns), and 0 if the setting were ignored.
  CHECK(kv["all_ns"] - kv["hw_all_ns"] >= 300);
}

TEST_CASE("sim: CUPTI detaches at a call's exit callback and attaches again", "[sim]") {
  Result r = run({SIM_CUPTI_PROBE, "detach"}, sim_env());
  INFO(r.out << r.err);
  CHECK(r.out.find("FAIL") == std::string::npos);
  REQUIRE(r.status == 0);
  auto kv = parse_kv(r.out);
  CHECK(kv["finalized"] == 1);
  CHECK(kv["kernels"] == 15);  // 10 before, 5 after attaching again; none while detached
}

TEST_CASE("sim: cuptiFinalize with recorded work running and nothing flushed aborts, outside a callback", "[sim]") {
  Result r = run({SIM_CUPTI_PROBE, "unsafe"}, sim_env());
  INFO(r.out << r.err);
  CHECK(r.status != 0);
  CHECK(r.out.find("survived") == std::string::npos);
  CHECK(r.err.find("cuptiFinalize outside a CUDA call's exit callback") != std::string::npos);
}

TEST_CASE("sim: a forced flush hands back work still running as records without times", "[sim]") {
  Result r = run({SIM_CUPTI_PROBE, "forced"}, sim_env());
  INFO(r.out << r.err);
  CHECK(r.out.find("FAIL") == std::string::npos);
  REQUIRE(r.status == 0);
  auto kv = parse_kv(r.out);
  CHECK(kv["finished"] == 3);  // a plain flush: only what the device finished
  CHECK(kv["untimed"] == 1);   // forced: the running kernel too, with 0 for both times
  CHECK(kv["after"] == 4);     // and never again with its times
}

TEST_CASE("sim: CUPTI drops and counts records when the consumer has no buffer", "[sim]") {
  Result r = run({SIM_CUPTI_PROBE, "drops"}, sim_env());
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  auto kv = parse_kv(r.out);
  CHECK(kv["delivered"] == 8);
  CHECK(kv["dropped"] == 12);
}

// In-process: NCCL kernels and a library's driver launches, seen through libcupti.so.13
// loaded as a profiler loads it (dlopen). Each test case runs in its own process.
namespace {
std::mutex g_mu;
std::vector<std::vector<uint8_t>> g_recs;
void CUPTIAPI request(uint8_t** b, size_t* size, size_t* max) {
  *b = static_cast<uint8_t*>(std::aligned_alloc(8, 1 << 16));
  *size = 1 << 16;
  *max = 0;
}
decltype(&cuptiActivityGetNextRecord) g_next = nullptr;
void CUPTIAPI complete(CUcontext, uint32_t, uint8_t* b, size_t, size_t valid) {
  CUpti_Activity* r = nullptr;
  std::lock_guard<std::mutex> lk(g_mu);
  while (g_next(b, valid, &r) == CUPTI_SUCCESS) {
    const size_t n = r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ? sizeof(CUpti_ActivityKernel10) : sizeof(CUpti_ActivityAPI);
    g_recs.emplace_back(reinterpret_cast<uint8_t*>(r), reinterpret_cast<uint8_t*>(r) + n);
  }
  std::free(b);
}
}  // namespace

TEST_CASE("sim: CUPTI reports NCCL collectives as NCCL kernels and library launches as DRIVER calls", "[sim]") {
  void* lib = dlopen(SIM_DIR "/libcupti.so.13", RTLD_NOW | RTLD_LOCAL);
  REQUIRE(lib);
  auto reg = reinterpret_cast<decltype(&cuptiActivityRegisterCallbacks)>(dlsym(lib, "cuptiActivityRegisterCallbacks"));
  auto enable = reinterpret_cast<decltype(&cuptiActivityEnable)>(dlsym(lib, "cuptiActivityEnable"));
  auto flush = reinterpret_cast<decltype(&cuptiActivityFlushAll)>(dlsym(lib, "cuptiActivityFlushAll"));
  g_next = reinterpret_cast<decltype(&cuptiActivityGetNextRecord)>(dlsym(lib, "cuptiActivityGetNextRecord"));
  REQUIRE((reg && enable && flush && g_next));
  REQUIRE(reg(request, complete) == CUPTI_SUCCESS);
  REQUIRE(enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);
  REQUIRE(enable(CUPTI_ACTIVITY_KIND_DRIVER) == CUPTI_SUCCESS);
  REQUIRE(enable(CUPTI_ACTIVITY_KIND_RUNTIME) == CUPTI_SUCCESS);

  ncclUniqueId id;
  ncclComm_t comm;
  REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
  REQUIRE(ncclCommInitRank(&comm, 1, id, 0) == ncclSuccess);
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  void* buf;
  REQUIRE(cudaMalloc(&buf, 4096) == cudaSuccess);
  REQUIRE(ncclAllReduce(buf, buf, 1024, ncclFloat32, ncclSum, comm, s) == ncclSuccess);
  REQUIRE(ncclAllGather(buf, buf, 1024, ncclBfloat16, comm, s) == ncclSuccess);
  REQUIRE(simgpu_launch_kernel(s, "sm90_xmma_gemm_bf16bf16_bf16f32", 50000) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  REQUIRE(flush(0) == CUPTI_SUCCESS);

  std::map<uint32_t, const CUpti_ActivityAPI*> api;
  std::map<std::string, uint32_t> kernels;  // name -> correlation id
  for (auto& r : g_recs) {
    auto* a = reinterpret_cast<const CUpti_Activity*>(r.data());
    if (a->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(a);
      kernels[k->name] = k->correlationId;
    } else {
      auto* p = reinterpret_cast<const CUpti_ActivityAPI*>(a);
      CHECK(a->kind == CUPTI_ACTIVITY_KIND_DRIVER);  // nothing here went through the runtime API
      api[p->correlationId] = p;
    }
  }
  for (auto& [n, c] : kernels) UNSCOPED_INFO("kernel " << n << " corr " << c);
  REQUIRE(kernels.count("ncclDevKernel_AllReduce_Sum_f32_RING_LL"));
  REQUIRE(kernels.count("ncclDevKernel_AllGather_RING_LL"));
  REQUIRE(kernels.count("sm90_xmma_gemm_bf16bf16_bf16f32"));
  CHECK(kernels.size() == 3);
  CHECK(api.size() == 3);
  for (const char* n : {"ncclDevKernel_AllReduce_Sum_f32_RING_LL", "ncclDevKernel_AllGather_RING_LL"}) {
    REQUIRE(api.count(kernels[n]));
    CHECK(api[kernels[n]]->cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx);
  }
  REQUIRE(api.count(kernels["sm90_xmma_gemm_bf16bf16_bf16f32"]));
  CHECK(api[kernels["sm90_xmma_gemm_bf16bf16_bf16f32"]]->cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
  CHECK(ncclCommDestroy(comm) == ncclSuccess);
}
