// A real CUDA program (built by nvcc, runtime linked as a shared library) that the tests run
// on the simulator. Its kernel is a real __global__ kernel: on a GPU it spins on
// %globaltimer for the requested time; on the simulator the "spin" in its name makes its
// first argument its duration. Prints key=value measurements taken with a stopwatch.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <thread>

__global__ void spin_kernel(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

__global__ void tiny_kernel(int* p) {
  if (p) *p = 1;
}

using Clock = std::chrono::steady_clock;
static double ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

#define CK(x)                                                                    \
  do {                                                                           \
    cudaError_t e_ = (x);                                                        \
    if (e_ != cudaSuccess) {                                                     \
      std::fprintf(stderr, "%s failed: %s\n", #x, cudaGetErrorString(e_));       \
      return 1;                                                                  \
    }                                                                            \
  } while (0)

// Kernel timing through the <<<>>> path (__cudaLaunchKernel).
static int kernels() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&cudaDeviceSynchronize), &info)) std::printf("cudart=%s\n", info.dli_fname);
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  std::printf("simulated=%d\n", std::strcmp(p.name, "gpuwatch simulated GPU") == 0 ? 1 : 0);
  CK(cudaFree(0));
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  auto t0 = Clock::now();
  spin_kernel<<<1, 1, 0, s>>>(20000000ull);
  auto t1 = Clock::now();
  CK(cudaGetLastError());
  CK(cudaStreamSynchronize(s));
  auto t2 = Clock::now();
  std::printf("launch_ms=%.4f single_ms=%.4f\n", ms(t0, t1), ms(t0, t2));
  t0 = Clock::now();
  for (int i = 0; i < 5; ++i) spin_kernel<<<1, 1, 0, s>>>(4000000ull);
  CK(cudaDeviceSynchronize());
  std::printf("five_ms=%.4f\n", ms(t0, Clock::now()));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  // Keep the stream busy while recording, so that host scheduling delays between the calls
  // cannot show up as device idle time inside the timed interval.
  spin_kernel<<<1, 1, 0, s>>>(5000000ull);
  CK(cudaEventRecord(a, s));
  spin_kernel<<<1, 1, 0, s>>>(7000000ull);
  CK(cudaEventRecord(b, s));
  CK(cudaEventSynchronize(b));
  float ev = 0;
  CK(cudaEventElapsedTime(&ev, a, b));
  std::printf("event_ms=%.4f\n", ev);
  CK(cudaStreamDestroy(s));
  return 0;
}

// A fixed workload whose device truth the tests know in advance.
static int truth() {
  const size_t h2d = 24000000, d2h = 6000000, mset = 2000000;  // 1 ms, 1 ms, 2 us
  void *d = nullptr, *pinned = nullptr;
  CK(cudaMalloc(&d, h2d));
  CK(cudaMallocHost(&pinned, h2d));
  void* pageable = std::malloc(d2h);
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  CK(cudaMemcpyAsync(d, pinned, h2d, cudaMemcpyHostToDevice, s));  // 1 ms
  spin_kernel<<<1, 1, 0, s>>>(10000000ull);                         // 10 ms, right after
  CK(cudaStreamSynchronize(s));
  std::this_thread::sleep_for(std::chrono::milliseconds(10));       // the one gap
  // All queued behind the 5 ms kernel, so back to back on the device: no further gap.
  spin_kernel<<<1, 1, 0, s>>>(5000000ull);                          // 5 ms
  CK(cudaMemsetAsync(d, 0, mset, s));                               // 2 us
  tiny_kernel<<<1, 1, 0, s>>>(nullptr);                             // default_kernel_us
  CK(cudaMemcpyAsync(pageable, d, d2h, cudaMemcpyDeviceToHost, s)); // 1 ms, blocks
  CK(cudaStreamSynchronize(s));
  std::free(pageable);
  return 0;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "kernels";
  if (!std::strcmp(mode, "kernels")) return kernels();
  if (!std::strcmp(mode, "truth")) return truth();
  std::fprintf(stderr, "usage: %s kernels|truth\n", argv[0]);
  return 2;
}
