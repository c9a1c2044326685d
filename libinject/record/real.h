// Finding the functions gpuwatch wraps. Each wrapper resolves its real function once
// (a function-local static: thread-safe, and a plain load after the first call).
#pragma once
#include <dlfcn.h>

namespace gpuwatch::inject {

// The next definition after this library (the real libcudart / libnccl), else one in a
// library that was loaded with RTLD_LOCAL (dlopen'ed NCCL, for instance).
void* ResolveReal(const char* name);

template <typename F>
F Real(const char* name) {
  return reinterpret_cast<F>(ResolveReal(name));
}

}  // namespace gpuwatch::inject

// Declares `real` as the real `fn`, typed like the declaration in the CUDA/NCCL headers.
#define GW_REAL(fn) static const auto real = ::gpuwatch::inject::Real<decltype(&fn)>(#fn)
// Same, for functions the headers do not declare: give the type.
#define GW_REAL_T(type, name) static const auto real = ::gpuwatch::inject::Real<type>(name)
