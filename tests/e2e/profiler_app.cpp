// Plays torch.profiler inside a job gpuwatch watches. CUPTI has one pair of buffer callbacks
// per process, and a profiler may take them in one of two orders:
//   late:  N copies, then the profiler registers its callbacks and enables copy records;
//   early: the profiler registers its callbacks before any CUDA work (gpuwatch starts CUPTI
//          after it), N copies, then it enables copy records;
//   detached: as late, after a pause and one more copy: time for gpuwatch to close its window
//          (when the copies spent its budget) and detach CUPTI at that copy's exit.
// (After one warm-up copy and a pause, so that gpuwatch has started CUPTI.) Then M more
// copies, a flush, and a check of what CUPTI handed the profiler. The profiler's half is
// profiler_lib.cpp, opened with RTLD_LOCAL as PyTorch is; the CUDA runtime is opened with
// dlopen, as Python does, and called through the process's scope, as a PLT call would be.
//   profiler_app late|early|detached N M     exit 0: fine; 5: a buffer that was not the profiler's;
//                                   6: the profiler's records missing; 3/4: setup failed
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {
template <typename F>
F Global(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  const bool early = std::strcmp(argv[1], "early") == 0;
  const long n = std::atol(argv[2]), m = std::atol(argv[3]);
  char exe[4096] = {};
  if (readlink("/proc/self/exe", exe, sizeof exe - 1) <= 0) return 3;
  std::string lib(exe);
  lib = lib.substr(0, lib.rfind('/')) + "/libgw_profiler.so";  // built next to this program
  void* prof = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!prof) {
    std::fprintf(stderr, "profiler_app: %s\n", dlerror());
    return 3;
  }
  auto profiler_register = reinterpret_cast<int (*)()>(dlsym(prof, "profiler_register"));
  auto profiler_enable = reinterpret_cast<int (*)()>(dlsym(prof, "profiler_enable"));
  auto profiler_finish = reinterpret_cast<void (*)(long*, long*)>(dlsym(prof, "profiler_finish"));
  if (early && profiler_register() != 0) return 4;

  if (!dlopen("libcudart.so.13", RTLD_NOW | RTLD_GLOBAL)) return 3;
  auto stream_create = Global<decltype(&cudaStreamCreate)>("cudaStreamCreate");
  auto malloc_dev = Global<decltype(&cudaMalloc)>("cudaMalloc");
  auto malloc_host = Global<decltype(&cudaMallocHost)>("cudaMallocHost");
  auto copy = Global<decltype(&cudaMemcpyAsync)>("cudaMemcpyAsync");
  auto sync = Global<decltype(&cudaStreamSynchronize)>("cudaStreamSynchronize");
  cudaStream_t s;
  void *dev = nullptr, *host = nullptr;
  if (stream_create(&s) != cudaSuccess || malloc_dev(&dev, 4096) != cudaSuccess ||
      malloc_host(&host, 4096) != cudaSuccess)
    return 3;
  // One copy, then a pause: gpuwatch starts CUPTI on its sender thread after the first call.
  copy(dev, host, 64, cudaMemcpyHostToDevice, s);
  sync(s);
  usleep(200 * 1000);
  for (long i = 0; i < n; ++i) copy(dev, host, 64, cudaMemcpyHostToDevice, s);
  sync(s);
  if (std::strcmp(argv[1], "detached") == 0) {
    usleep(100 * 1000);
    copy(dev, host, 64, cudaMemcpyHostToDevice, s);
    sync(s);
    usleep(50 * 1000);
  }
  // Straight on, as a profiler starts while the job runs: CUPTI still holds a buffer that
  // gpuwatch asked for, partly filled with the copies above.
  if (!early && profiler_register() != 0) return 4;
  if (profiler_enable() != 0) return 4;
  for (long i = 0; i < m; ++i) copy(dev, host, 64, cudaMemcpyHostToDevice, s);
  sync(s);
  long unknown = 0, seen = 0;
  profiler_finish(&unknown, &seen);
  std::printf("profiler_app: %ld unknown buffers, %ld copy records of %ld\n", unknown, seen, m);
  if (unknown) return 5;
  return seen == m ? 0 : 6;
}
