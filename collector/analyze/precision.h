// The arithmetic a GEMM or convolution kernel does, read from its name (cuBLAS, cuBLASLt,
// CUTLASS, cuDNN and Triton name their kernels after it): the `mixed_precision` finding
// counts the matrix time spent in plain FP32 (no tensor cores), which TF32, BF16 or FP16
// (AMP) run several times faster.
#pragma once
#include <string_view>

namespace gpuwatch::collector {

enum class KernelMath { kNotMatmul, kUnknown, kFp32, kTf32, kReduced };

// kNotMatmul for kernels that are not a GEMM or convolution; kUnknown for one whose name
// does not say its precision; kFp32 for FP32 on the CUDA cores (sgemm, f32f32_f32f32,
// simt); kTf32; kReduced for FP16, BF16, FP8 and INT8 tensor-core kernels.
KernelMath MathOf(std::string_view name);

// Conservative speed-up of a FP32 GEMM moved to TF32 or BF16 tensor cores: the finding's
// time lost is FP32 matrix time x (1 - 1 / it). (H100/H200 dense peaks: FP32 67 TFLOPS,
// TF32 495, BF16 989 -- real kernels gain less than the peaks say.)
inline constexpr double kTensorCoreSpeedup = 2.0;

}  // namespace gpuwatch::collector
