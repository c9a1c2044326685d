// A small CUDA program for the fault tests: makes a known number of recorded calls (CALLS
// copies, and but in `burst` a kernel launch with each and kTrailingLaunches more after the
// last sync, which the library may still hold in its launch summary when the program ends),
// then ends the way argv[1] says — exit, return, an uncaught exception, a signal — or forks a
// child that stays off the GPU, or bursts millions of calls to overflow the rings.
//   fault_app MODE CALLS
#include <cuda_runtime_api.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

// What nvcc's module constructor does for a kernel: its host stub, registered by name.
extern "C" void __cudaRegisterFunction(void**, const char*, char*, const char*, int, uint3*, uint3*, dim3*, dim3*,
                                       int*);
static void FaultAppKernelStub() {}
constexpr long kTrailingLaunches = 37;

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  static char device_name[] = "fault_app_kernel";
  __cudaRegisterFunction(nullptr, reinterpret_cast<const char*>(&FaultAppKernelStub), device_name, device_name, -1,
                         nullptr, nullptr, nullptr, nullptr, nullptr);
  const void* kernel = reinterpret_cast<const void*>(&FaultAppKernelStub);
  const char* mode = argv[1];
  const long calls = std::atol(argv[2]);
  cudaStream_t s;
  void *dev = nullptr, *host = nullptr;
  if (cudaStreamCreate(&s) != cudaSuccess || cudaMalloc(&dev, 4096) != cudaSuccess ||
      cudaMallocHost(&host, 4096) != cudaSuccess) {
    std::fprintf(stderr, "fault_app: CUDA setup failed\n");
    return 3;
  }
  const bool burst = std::strcmp(mode, "burst") == 0;
  for (long i = 0; i < calls; ++i) {
    cudaMemcpyAsync(dev, host, 64, cudaMemcpyHostToDevice, s);  // one recorded H2D copy each
    if (!burst) cudaLaunchKernel(kernel, dim3(1), dim3(1), nullptr, 0, s);
    if (!burst && i % 100 == 99) cudaStreamSynchronize(s);
  }
  cudaStreamSynchronize(s);
  for (long i = 0; !burst && i < kTrailingLaunches; ++i) cudaLaunchKernel(kernel, dim3(1), dim3(1), nullptr, 0, s);
  std::printf("fault_app: %ld copies done\n", calls);
  std::fflush(stdout);
  if (!std::strcmp(mode, "exit")) std::exit(7);
  if (!std::strcmp(mode, "throw")) throw std::runtime_error("fault_app: uncaught");
  if (!std::strcmp(mode, "sigterm")) raise(SIGTERM);
  if (!std::strcmp(mode, "sigint")) raise(SIGINT);
  if (!std::strcmp(mode, "fork")) {
    // As a DataLoader worker: forked without exec, works on the CPU, exits.
    const pid_t child = fork();
    if (child == 0) {
      std::printf("fault_app: child %d\n", getpid());
      std::fflush(stdout);
      _exit(0);
    }
    int st = 0;
    waitpid(child, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) return 4;
  }
  if (!std::strcmp(mode, "hang")) pause();  // for SIGKILL from outside
  return 0;
}
