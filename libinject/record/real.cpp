// dlsym(RTLD_NEXT), then the CUDA/NCCL/CUPTI libraries loaded RTLD_LOCAL.
#include "record/real.h"

namespace gpuwatch::inject {

void* ResolveReal(const char* name) {
  if (void* p = dlsym(RTLD_NEXT, name)) return p;
  // CUPTI too: PyTorch's libtorch_cpu.so needs libcupti.so.13 and Python loads it with
  // RTLD_LOCAL, so RTLD_NEXT does not see CUPTI while Kineto's calls still reach the
  // wrappers in hooks_cupti.cpp (found on an H200: the wrappers failed every call and
  // torch.profiler recorded nothing).
  static const char* const kLibs[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so", "libnccl.so.2",
                                      "libnccl.so",      "libcupti.so.13",  "libcupti.so.12", "libcupti.so"};
  for (const char* lib : kLibs) {
    if (void* h = dlopen(lib, RTLD_NOLOAD | RTLD_LAZY)) {
      if (void* p = dlsym(h, name)) return p;
    }
  }
  return nullptr;
}

}  // namespace gpuwatch::inject
