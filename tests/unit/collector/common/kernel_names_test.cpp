// Kernel names for reading (ShortName): real CUTLASS, cuBLAS and PyTorch mangled names, a
// 4 KiB one, operators and Python frames whose angle brackets are no template.
#include <catch2/catch.hpp>

#include <string>

#include "common/kernel_names.h"

namespace col = gpuwatch::collector;

namespace {

// Characters (UTF-8 code points), as a reader counts them.
size_t Chars(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xc0) != 0x80;
  return n;
}

const std::string kEllipsis = "\xe2\x80\xa6";

}  // namespace

TEST_CASE("collector: ShortName collapses template and parameter lists of mangled kernels") {
  // CUTLASS 2.x: the kernel's name is Kernel, its operator is a 300-character template.
  const std::string cutlass =
      "_ZN7cutlass6KernelINS_4gemm6kernel13GemmUniversalINS1_11threadblock13MmaMultistageINS_9GemmShapeILi128ELi256E"
      "Li64EEENS_6half_tENS_6layout8RowMajorELi3EEENS_8epilogue6thread17LinearCombinationIS8_Li8EffEELb0EEEEEvNT_6P"
      "aramsE";
  REQUIRE(col::DemangleName(cutlass).size() > 300);
  CHECK(col::ShortName(cutlass) == "cutlass::Kernel<" + kEllipsis + ">(" + kEllipsis + ")");
  // cuBLAS: the name, with its parameters' templates inside the collapsed list.
  CHECK(col::ShortName("_Z17gemv2T_kernel_valIifLi128ELb0E18cublasGemvParamsExIi30cublasGemvTensorStridedBatchedIKfES1_IfE"
                       "EEvT_S6_T0_T3_") == "gemv2T_kernel_val<" + kEllipsis + ">(" + kEllipsis + ")");
  CHECK(col::ShortName("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEENS_6detail5ArrayIPcLi1EEEEEv"
                       "iT0_T1_") == "at::native::vectorized_elementwise_kernel<" + kEllipsis + ">(" + kEllipsis + ")");
  // Names cuBLAS and NCCL give their kernels unmangled stay as they are.
  CHECK(col::ShortName("ampere_sgemm_128x64_nn") == "ampere_sgemm_128x64_nn");
  CHECK(col::ShortName("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)") ==
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL(" + kEllipsis + ")");
  CHECK(col::ShortName("_Z6kernelPf") == "kernel(" + kEllipsis + ")");
  CHECK(col::ShortName("_Z6kernelv") == "kernel()");
}

TEST_CASE("collector: ShortName keeps operators' brackets and Python frames' angle brackets") {
  CHECK(col::ShortName("_ZNK1SltERKS_") == "S::operator<(" + kEllipsis + ") const");
  CHECK(col::ShortName("_Z4lessI1SEbT_S1_") == "bool less<" + kEllipsis + ">(" + kEllipsis + ")");
  CHECK(col::ShortName("proj/train.py:9 in <module>") == "proj/train.py:9 in <module>");
  CHECK(col::ShortName("torch/utils/data/dataloader.py:631 in __next__") ==
        "torch/utils/data/dataloader.py:631 in __next__");
  // A native frame: its function collapsed, its module kept.
  CHECK(col::ShortName("read_input(int) (app)") == "read_input(" + kEllipsis + ") (app)");
  CHECK(col::ShortName("ns::host_sleep(std::chrono::time_point<std::chrono::steady_clock>) (gpuwatch-scenario-rank)") ==
        "ns::host_sleep(" + kEllipsis + ") (gpuwatch-scenario-rank)");
  CHECK(col::ShortName("(no frame)") == "(no frame)");
  CHECK(col::ShortName("") == "");
}

TEST_CASE("collector: ShortName puts a 4 KiB kernel name on one line") {
  // CUTLASS's kernel over a 4 KiB type: the demangler may refuse a name that long
  // (libstdc++'s stops near 1 KiB); the name comes out the same either way.
  const std::string long_type(4096, 'x');
  const std::string cutlass = "_ZN7cutlass6KernelINS_4gemm6kernel13GemmUniversalIN7cutlass" +
                              std::to_string(long_type.size()) + long_type + "EEEEEvNT_6ParamsE";
  REQUIRE(cutlass.size() > 4096);
  CHECK(col::ShortName(cutlass) == "cutlass::Kernel<" + kEllipsis + ">(" + kEllipsis + ")");
  // A variadic kernel<0, 1, ..., N>(), mangled to over 4 KiB.
  std::string variadic = "_Z6kernelIJ";
  for (int i = 0; variadic.size() < 4096; ++i) variadic += "Li" + std::to_string(i) + "E";
  variadic += "EEvv";
  CHECK(col::ShortName(variadic) == "kernel<" + kEllipsis + ">(" + kEllipsis + ")");
  // What the demangler refuses is read from its mangled parts; what those do not give stays.
  CHECK(col::ShortName("_ZN7cutlass6KernelIQ") == "cutlass::Kernel<" + kEllipsis + ">(" + kEllipsis + ")");
  CHECK(col::ShortName("_ZN2at6native11some_kernelEQ") == "at::native::some_kernel(" + kEllipsis + ")");
  CHECK(col::ShortName("_Z999x") == "_Z999x");
  // Not mangled, no template: cut to the cap, the last character an ellipsis.
  const std::string plain(4096, 'k');
  const std::string s = col::ShortName(plain);
  CHECK(Chars(s) == col::kShortNameChars);
  CHECK(s.substr(s.size() - kEllipsis.size()) == kEllipsis);
  CHECK(s.compare(0, col::kShortNameChars - 1, plain, 0, col::kShortNameChars - 1) == 0);
  CHECK(Chars(col::ShortName(plain, 10)) == 10);
  CHECK(col::ShortName(std::string(10, 'k'), 10) == std::string(10, 'k'));
  // A template argument list that never closes (a name cut short) still comes out short.
  CHECK(col::ShortName("cutlass::Kernel<" + std::string(4096, 'x')) == "cutlass::Kernel<" + kEllipsis + ">");
}
