// What a wrapper returns when the library it wraps is not loaded. A program reaches such a
// wrapper only if it took the wrapper's address before gpuwatch could take it back (a weak
// reference resolved while a constructor ran; hooks/weak_refs.h): it gets its library's own
// "not available" code, never a call to address 0.
#pragma once
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <type_traits>

#include "record/real.h"

namespace gpuwatch::inject::hooks {

// NCCL's and CUPTI's codes are specialized where their wrappers are (hooks_nccl.cpp,
// hooks_cupti.cpp): nccl.h brings cuda_runtime.h's C++ overloads, which the wrappers of the
// runtime must not see.
template <typename R>
constexpr R MissingValue() {
  if constexpr (std::is_same_v<R, cudaError_t>) return cudaErrorNotSupported;
  else if constexpr (std::is_same_v<R, CUresult>) return CUDA_ERROR_NOT_SUPPORTED;
  else if constexpr (!std::is_void_v<R>) return R{};
}

template <typename R, typename... A>
constexpr R MissingFor(const RealFn<R (*)(A...)>&) {
  return MissingValue<R>();
}

}  // namespace gpuwatch::inject::hooks

// Declares `real`, the real function of the wrapper it opens, typed as `type`; returns the
// library's "not available" code from the wrapper when the function is not loaded.
#define GW_REAL_T(type, name)                                                                    \
  static constinit ::gpuwatch::inject::RealFn<type> real_fn_{name};                              \
  const auto real = real_fn_.Get();                                                              \
  if (real == nullptr)                                                                           \
  return ::gpuwatch::inject::hooks::MissingFor(real_fn_)
// Same, typed like the declaration of `fn` in the CUDA/NCCL/CUPTI headers.
#define GW_REAL(fn) GW_REAL_T(decltype(&fn), #fn)
