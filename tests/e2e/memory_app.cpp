// A small CUDA program for the memory test (device_state_test.cpp): every allocation API
// gpuwatch hooks, in a known order, so that the reserved peak is known exactly.
//   memory_app          (prints "peak BYTES" and "free BYTES", what cudaMemGetInfo said)
//   memory_app driver   the driver's allocations, through cudaGetDriverEntryPointByVersion as
//                       PyTorch and cuBLAS get them (prints "peak BYTES")
//   memory_app dlsym    the same, taken from libcuda.so.1 with dlsym as Triton takes its launch
#include <cuda.h>
#include <dlfcn.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>

namespace {

constexpr size_t kMiB = 1ull << 20;

bool Ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) std::fprintf(stderr, "memory_app: %s: %s\n", what, cudaGetErrorString(e));
  return e == cudaSuccess;
}

void* g_libcuda = nullptr;  // set: the functions come from it by dlsym (their exported names)

template <typename Fn>
bool Entry(const char* symbol, Fn& fn, const char* exported = nullptr) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (g_libcuda) {
    p = dlsym(g_libcuda, exported ? exported : symbol);
  } else if (!Ok(cudaGetDriverEntryPointByVersion(symbol, &p, 12000, cudaEnableDefault, &found), symbol) ||
             found != cudaDriverEntryPointSuccess) {
    p = nullptr;
  }
  if (!p) {
    std::fprintf(stderr, "memory_app: %s not found\n", symbol);
    return false;
  }
  fn = reinterpret_cast<Fn>(p);
  return true;
}

bool Cu(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) std::fprintf(stderr, "memory_app: %s: CUresult %d\n", what, static_cast<int>(r));
  return r == CUDA_SUCCESS;
}

// cuMemAlloc 1 GiB, cuMemCreate 512 MiB, cuMemAllocAsync 256 MiB (the peak: all three), then
// each freed by its own call.
int DriverAllocations() {
  decltype(&cuMemAlloc_v2) alloc = nullptr;
  decltype(&cuMemFree_v2) free_ = nullptr;
  decltype(&cuMemAllocAsync) alloc_async = nullptr;
  decltype(&cuMemFreeAsync) free_async = nullptr;
  decltype(&cuMemCreate) create = nullptr;
  decltype(&cuMemRelease) release = nullptr;
  cudaStream_t s;
  if (!Ok(cudaSetDevice(0), "cudaSetDevice") || !Ok(cudaStreamCreate(&s), "cudaStreamCreate") ||
      !Entry("cuMemAlloc", alloc, "cuMemAlloc_v2") || !Entry("cuMemFree", free_, "cuMemFree_v2") || !Entry("cuMemAllocAsync", alloc_async) ||
      !Entry("cuMemFreeAsync", free_async) || !Entry("cuMemCreate", create) || !Entry("cuMemRelease", release))
    return 3;
  CUdeviceptr a = 0, c = 0;
  CUmemGenericAllocationHandle h = 0;
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  const CUstream cs = reinterpret_cast<CUstream>(s);
  if (!Cu(alloc(&a, 1024 * kMiB), "cuMemAlloc") || !Cu(create(&h, 512 * kMiB, &prop, 0), "cuMemCreate") ||
      !Cu(alloc_async(&c, 256 * kMiB, cs), "cuMemAllocAsync") || !Cu(free_async(c, cs), "cuMemFreeAsync") ||
      !Cu(release(h), "cuMemRelease") || !Cu(free_(a), "cuMemFree"))
    return 3;
  std::printf("peak %zu\n", (1024 + 512 + 256) * kMiB);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && !std::strcmp(argv[1], "driver")) return DriverAllocations();
  if (argc > 1 && !std::strcmp(argv[1], "dlsym")) {
    g_libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!g_libcuda) {
      std::fprintf(stderr, "memory_app: %s\n", dlerror());
      return 4;
    }
    return DriverAllocations();
  }
  cudaStream_t s;
  void *a = nullptr, *b = nullptr, *c = nullptr, *d = nullptr;
  size_t free_bytes = 0, total_bytes = 0;
  if (!Ok(cudaSetDevice(0), "cudaSetDevice") || !Ok(cudaFree(nullptr), "cudaFree(0)") ||
      !Ok(cudaStreamCreate(&s), "cudaStreamCreate") || !Ok(cudaMalloc(&a, 1024 * kMiB), "cudaMalloc") ||
      !Ok(cudaMallocAsync(&b, 512 * kMiB, s), "cudaMallocAsync") ||
      !Ok(cudaMallocManaged(&c, 256 * kMiB, cudaMemAttachGlobal), "cudaMallocManaged") ||
      !Ok(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo") || !Ok(cudaFreeAsync(b, s), "cudaFreeAsync") ||
      !Ok(cudaStreamSynchronize(s), "cudaStreamSynchronize") || !Ok(cudaMalloc(&d, 2048 * kMiB), "cudaMalloc") ||
      !Ok(cudaFree(a), "cudaFree") || !Ok(cudaFree(c), "cudaFree") || !Ok(cudaFree(d), "cudaFree"))
    return 3;
  std::printf("peak %zu\nfree %zu\ntotal %zu\n", (1024 + 2048 + 256) * kMiB, free_bytes, total_bytes);
  return 0;
}
