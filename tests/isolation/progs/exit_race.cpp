// One thread calls exit() while the others are inside CUDA calls (copies, syncs), as a job
// whose main thread returns while its workers still run. argv[1]: threads (default 4).
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 4;
  std::atomic<int> started{0};
  for (int t = 0; t < threads; ++t) {
    std::thread([&started] {
      cudaStream_t s;
      void *dev = nullptr, *host = nullptr;
      if (cudaStreamCreate(&s) != cudaSuccess || cudaMalloc(&dev, 4096) != cudaSuccess ||
          cudaMallocHost(&host, 4096) != cudaSuccess)
        std::_Exit(3);
      started.fetch_add(1);
      for (;;) {
        cudaMemcpyAsync(dev, host, 64, cudaMemcpyHostToDevice, s);
        cudaStreamSynchronize(s);
      }
    }).detach();
  }
  while (started.load() < threads) usleep(1000);
  usleep(30000);
  std::printf("exiting with %d threads in CUDA\n", threads);
  std::fflush(stdout);
  std::exit(0);
}
