// A C++ training loop without Python (issue 16, native frames): each step copies to the GPU
// and waits for it (cudaMemcpy), then the GPU sits idle while the host runs two functions:
// spin_compute (CPU-bound, SPIN_MS) and read_input (blocked in read() of a pipe that a
// producer thread fills READ_MS after it is asked). The GPU's host-wait gaps are those two,
// so host_frames must name both, spin_compute first when SPIN_MS > READ_MS. Prints the truth
// it measured: the seconds spent in each.
//   native_frames_app STEPS SPIN_MS READ_MS
// Built with frame pointers and exported symbols (CMakeLists.txt), as a user would to get
// names; the producer never calls CUDA, so it is not sampled.
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace {

int g_ask[2], g_data[2];
double g_read_ms = 0;

double Now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void* Producer(void*) {
  char c;
  while (read(g_ask[0], &c, 1) == 1) {
    const timespec wait{0, static_cast<long>(g_read_ms * 1e6)};
    nanosleep(&wait, nullptr);
    if (write(g_data[1], &c, 1) != 1) break;
  }
  return nullptr;
}

}  // namespace

// Arithmetic, the clock read only every 4096 rounds: nearly every sample lands in this frame.
__attribute__((noinline)) double spin_compute(double ms) {
  const double end = Now() + ms * 1e-3;
  double x = 1.0;
  for (;;) {
    for (int i = 0; i < 4096; ++i) x = x * 1.0000001 + 1e-9;
    if (Now() >= end) return x;
  }
}

__attribute__((noinline)) int read_input() {
  char c = 1;
  if (write(g_ask[1], &c, 1) != 1) return -1;
  if (read(g_data[0], &c, 1) != 1) return -1;  // blocked until the producer writes
  return c;
}

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  const int steps = std::atoi(argv[1]);
  const double spin_ms = std::atof(argv[2]);
  g_read_ms = std::atof(argv[3]);
  if (pipe(g_ask) != 0 || pipe(g_data) != 0) return 3;
  pthread_t producer;
  if (pthread_create(&producer, nullptr, Producer, nullptr) != 0) return 3;
  const size_t bytes = 8 << 20;
  void *dev = nullptr, *host = nullptr;
  if (cudaMalloc(&dev, bytes) != cudaSuccess || cudaMallocHost(&host, bytes) != cudaSuccess) return 4;
  double spin_s = 0, read_s = 0, sink = 0;
  for (int s = 0; s < steps; ++s) {
    cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice);  // the GPU busy ~1 ms, the host waits
    double t = Now();
    sink += spin_compute(spin_ms);
    spin_s += Now() - t;
    t = Now();
    if (read_input() < 0) return 5;
    read_s += Now() - t;
  }
  cudaDeviceSynchronize();
  close(g_ask[1]);
  pthread_join(producer, nullptr);
  std::printf("native_frames_app: {\"spin_s\": %.6f, \"read_s\": %.6f, \"sink\": %d}\n", spin_s, read_s, sink > 0);
  return 0;
}
