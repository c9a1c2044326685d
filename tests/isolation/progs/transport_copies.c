/* N host-to-device copies (argv[1]), then an immediate return, or _exit(3) when argv[2] is
 * "_exit" (as Python's os._exit): for the exit paths (a process that ends right after its
 * first CUDA call, one that leaves past atexit, a collector that does not read). */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  const long n = argc > 1 ? atol(argv[1]) : 1;
  void* dev = NULL;
  static char host[256];
  if (cudaMalloc(&dev, sizeof host) != cudaSuccess) return 3;
  for (long i = 0; i < n; ++i) cudaMemcpy(dev, host, sizeof host, cudaMemcpyHostToDevice);
  printf("%ld copies\n", n);
  if (argc > 2 && strcmp(argv[2], "_exit") == 0) {
    fflush(stdout);
    _exit(3);
  }
  return 0;
}
