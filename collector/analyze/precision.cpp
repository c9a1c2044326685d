// See precision.h. Substrings of the vendor libraries' kernel names, lower-cased.
#include "analyze/precision.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace gpuwatch::collector {
namespace {

bool Has(const std::string& s, std::initializer_list<const char*> any) {
  return std::any_of(any.begin(), any.end(), [&](const char* w) { return s.find(w) != std::string::npos; });
}

}  // namespace

KernelMath MathOf(std::string_view name) {
  std::string s(name.substr(0, 512));
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (!Has(s, {"gemm", "conv", "xmma", "cutlass", "fprop", "dgrad", "wgrad", "matmul"})) return KernelMath::kNotMatmul;
  if (Has(s, {"tf32"})) return KernelMath::kTf32;
  if (Has(s, {"bf16", "f16", "fp16", "half", "hgemm", "h884", "h1688", "h16816", "s16816", "s1688", "hmma", "e4m3",
              "e5m2", "fp8", "imma", "i8i8", "int8"}))
    return KernelMath::kReduced;
  if (Has(s, {"sgemm", "f32f32_f32f32", "simt", "fp32", "float", "_f32"})) return KernelMath::kFp32;
  return KernelMath::kUnknown;
}

}  // namespace gpuwatch::collector
