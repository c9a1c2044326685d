// mixed_precision (analyze/precision.h, findings_device.cpp): the arithmetic of GEMM and
// convolution kernels by name, and the FP32 matrix time a rank spent.
#include <algorithm>
#include <catch2/catch.hpp>

#include "analyze/precision.h"
#include "analyze/rank_model.h"
#include "fixtures.h"

using namespace gwtest;
using col::KernelMath;

TEST_CASE("collector: a GEMM or convolution kernel's precision, from its name") {
  CHECK(col::MathOf("ampere_sgemm_128x64_nn") == KernelMath::kFp32);
  CHECK(col::MathOf("sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8") == KernelMath::kFp32);
  CHECK(col::MathOf("implicit_convolve_sgemm") == KernelMath::kFp32);
  CHECK(col::MathOf("sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x16") == KernelMath::kTf32);
  CHECK(col::MathOf("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_nn") == KernelMath::kReduced);
  CHECK(col::MathOf("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64") == KernelMath::kReduced);
  CHECK(col::MathOf("cutlass_80_tensorop_f16_s16816gemm_relu_f16_64x64_32x6_nn_align8") == KernelMath::kReduced);
  CHECK(col::MathOf("xmma_fprop_implicit_gemm_indexed_wo_smem") == KernelMath::kUnknown);
  CHECK(col::MathOf("vectorized_elementwise_kernel") == KernelMath::kNotMatmul);
  CHECK(col::MathOf("gpuwatch_spin_kernel") == KernelMath::kNotMatmul);
}

TEST_CASE("collector: mixed_precision counts FP32 matrix time, not tensor-core time") {
  constexpr uint64_t kMs = 1'000'000;
  wire::Batch b;
  for (auto [id, name] : {std::pair<uint32_t, const char*>{1, "ampere_sgemm_128x64_nn"},
                          {2, "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_nn"},
                          {3, "vectorized_elementwise_kernel"}}) {
    auto* k = b.add_kernel_names();
    k->set_id(id);
    k->set_name(name);
  }
  uint64_t t = 1000 * kMs;
  // 30 x (3 ms FP32 GEMM, 1 ms BF16 GEMM, 1 ms elementwise), back to back.
  for (int i = 0; i < 30; ++i)
    for (auto [id, ms] : {std::pair<uint32_t, uint64_t>{1, 3}, {2, 1}, {3, 1}}) {
      Work(&b, wire::ACTIVITY_KERNEL, t, t + ms * kMs)->set_name_id(id);
      t += ms * kMs;
    }
  b.set_gpu_source(wire::GPU_SOURCE_CUPTI);
  col::RankModel m;
  m.OnBatch(b);
  const col::RankResult& r = m.Result();
  const auto f = std::find_if(r.findings.begin(), r.findings.end(), [](const col::Finding& x) { return x.id == "mixed_precision"; });
  REQUIRE(f != r.findings.end());
  CHECK(f->evidence["fp32_matmul_s"].get<double>() == Approx(0.09));
  CHECK(f->evidence["fp32_share_of_matmul"].get<double>() == Approx(0.75));
  CHECK(f->evidence["fp32_matmul_kernels"] == 30);
  CHECK(f->time_lost_s == Approx(0.09 * (1 - 1 / col::kTensorCoreSpeedup)));
  CHECK(f->evidence["top_fp32_kernels"][0]["name"] == "ampere_sgemm_128x64_nn");
}
