// Plays torch.profiler inside a job gpuwatch watches. CUPTI has one pair of buffer callbacks
// per process, and Kineto uses them in one of two orders (both seen with PyTorch 2.11 on an
// H200):
//   late:  N copies, then the profiler registers its callbacks and enables copy records;
//   early: the profiler registers its callbacks before any CUDA work (gpuwatch starts CUPTI
//          after it), N copies, then it enables copy records.
// (After one warm-up copy and a pause, so that gpuwatch has started CUPTI.) Then M more copies, a flush, and a check of what CUPTI handed the profiler. The CUDA
// runtime and CUPTI are opened with dlopen, as Python does, so gpuwatch starts on the
// first copy, and every call goes through the process's symbol scope, as a PLT call would.
//   profiler_app late|early N M     exit 0: fine; 5: a buffer that was not ours; 6: records missing
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

namespace {
std::mutex mu;
std::set<uint8_t*> ours;
long unknown_buffers = 0, copies_seen = 0;

void CUPTIAPI Request(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 1 << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
  std::lock_guard<std::mutex> lock(mu);
  ours.insert(*buffer);
}

void CUPTIAPI Complete(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard<std::mutex> lock(mu);
  if (!ours.count(buffer)) {
    ++unknown_buffers;  // not ours: never free or read it
    return;
  }
  static const auto next = reinterpret_cast<decltype(&cuptiActivityGetNextRecord)>(
      dlsym(RTLD_DEFAULT, "cuptiActivityGetNextRecord"));
  CUpti_Activity* r = nullptr;
  while (next(buffer, valid, &r) == CUPTI_SUCCESS)
    if (r->kind == CUPTI_ACTIVITY_KIND_MEMCPY) ++copies_seen;
}

// The process's definition (gpuwatch's wrapper when it is preloaded), as a PLT call would.
template <typename F>
F Global(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  const bool early = std::strcmp(argv[1], "early") == 0;
  const long n = std::atol(argv[2]), m = std::atol(argv[3]);
  if (!dlopen("libcupti.so.13", RTLD_NOW | RTLD_GLOBAL)) return 3;
  auto register_callbacks = Global<decltype(&cuptiActivityRegisterCallbacks)>("cuptiActivityRegisterCallbacks");
  auto enable = Global<decltype(&cuptiActivityEnable)>("cuptiActivityEnable");
  auto flush = Global<decltype(&cuptiActivityFlushAll)>("cuptiActivityFlushAll");
  if (early && register_callbacks(Request, Complete) != CUPTI_SUCCESS) return 4;

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
  // Straight on, as a profiler starts while the job runs: CUPTI still holds a buffer that
  // gpuwatch asked for, partly filled with the copies above.
  if (!early && register_callbacks(Request, Complete) != CUPTI_SUCCESS) return 4;
  if (enable(CUPTI_ACTIVITY_KIND_MEMCPY) != CUPTI_SUCCESS) return 4;
  for (long i = 0; i < m; ++i) copy(dev, host, 64, cudaMemcpyHostToDevice, s);
  sync(s);
  flush(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::printf("profiler_app: %ld unknown buffers, %ld copy records of %ld\n", unknown_buffers, copies_seen, m);
  if (unknown_buffers) return 5;
  return copies_seen == m ? 0 : 6;
}
