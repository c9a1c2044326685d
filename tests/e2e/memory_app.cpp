// A small CUDA program for the memory test (device_state_test.cpp): every allocation API
// gpuwatch hooks, in a known order, so that the reserved peak is known exactly.
//   memory_app   (prints "peak BYTES" and "free BYTES", what cudaMemGetInfo said)
#include <cuda_runtime_api.h>

#include <cstdio>

namespace {

constexpr size_t kMiB = 1ull << 20;

bool Ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) std::fprintf(stderr, "memory_app: %s: %s\n", what, cudaGetErrorString(e));
  return e == cudaSuccess;
}

}  // namespace

int main() {
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
