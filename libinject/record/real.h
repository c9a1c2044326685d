// Finding the functions gpuwatch wraps. A wrapper looks its real function up until it is
// found, then keeps it (a relaxed load after that): a runtime the job dlopen()s after
// start-up is found on the first call after it, and a wrapper whose library is not loaded
// never calls address 0 (it returns that library's "not available" code, hooks/missing.h).
#pragma once
#include <dlfcn.h>

#include <atomic>

namespace gpuwatch::inject {

// The next definition after this library (the real libcudart / libnccl), else one in a
// library that was loaded with RTLD_LOCAL (dlopen'ed NCCL, for instance).
void* ResolveReal(const char* name);

// A handle to the loaded library whose file name starts with `stem` ("libcudart.so"), or
// null when none is loaded. Reads the loader's list: no file is opened.
void* LoadedLibrary(const char* stem);

template <typename F>
F Real(const char* name) {
  return reinterpret_cast<F>(ResolveReal(name));
}

// A wrapper's real function. Constant-initialized: a function-local static of this type
// needs no guard, so the hot path is one load and a branch.
template <typename F>
class RealFn {
 public:
  constexpr explicit RealFn(const char* name) : name_(name) {}
  F Get() {
    F f = fn_.load(std::memory_order_relaxed);
    if (f != nullptr) [[likely]]
      return f;
    f = Real<F>(name_);  // not found: asked again next call, never remembered as absent
    if (f != nullptr) fn_.store(f, std::memory_order_relaxed);
    return f;
  }

 private:
  const char* name_;
  std::atomic<F> fn_{nullptr};
};

}  // namespace gpuwatch::inject
