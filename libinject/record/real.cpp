// dlsym(RTLD_NEXT), then the CUDA/NCCL/CUPTI libraries loaded RTLD_LOCAL.
#include "record/real.h"

#include <link.h>

#include <cstring>

namespace gpuwatch::inject {

void* LoadedLibrary(const char* stem) {
  struct Find {
    const char* stem;
    size_t len;
    char path[4096];
  } find{stem, std::strlen(stem), {}};
  dl_iterate_phdr([](dl_phdr_info* info, size_t, void* p) {
    auto& f = *static_cast<Find*>(p);
    const char* name = info->dlpi_name;
    if (!name || !*name) return 0;
    const char* base = std::strrchr(name, '/');
    base = base ? base + 1 : name;
    if (std::strncmp(base, f.stem, f.len) != 0 || std::strlen(name) >= sizeof f.path) return 0;
    std::memcpy(f.path, name, std::strlen(name) + 1);
    return 1;
  }, &find);
  // By the path it was loaded from: the loader finds it among the loaded objects, opens
  // nothing (a bare name with RTLD_NOLOAD searches the library path, ~80 failed opens).
  return find.path[0] ? dlopen(find.path, RTLD_NOLOAD | RTLD_LAZY) : nullptr;
}

void* ResolveReal(const char* name) {
  if (void* p = dlsym(RTLD_NEXT, name)) return p;
  // CUPTI too: PyTorch's libtorch_cpu.so needs libcupti.so.13 and Python loads it with
  // RTLD_LOCAL, so RTLD_NEXT does not see CUPTI while Kineto's calls still reach the
  // wrappers in hooks_cupti.cpp (found on an H200: the wrappers failed every call and
  // torch.profiler recorded nothing).
  for (const char* stem : {"libcudart.so", "libnccl.so", "libcupti.so"}) {
    if (void* h = LoadedLibrary(stem)) {
      if (void* p = dlsym(h, name)) return p;
    }
  }
  return nullptr;
}

}  // namespace gpuwatch::inject
