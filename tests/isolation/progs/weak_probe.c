/* Takes the CPU path when no CUDA runtime is linked, as libraries that support both do:
 * a weak reference, then dlsym(RTLD_DEFAULT); then loads the runtime itself (argv[1], if
 * given) and asks again. Prints what it found and what the calls returned. */
#include <dlfcn.h>
#include <stdio.h>
#include <stddef.h>

extern int cudaDeviceSynchronize(void) __attribute__((weak));
extern int cudaMemGetInfo(size_t*, size_t*) __attribute__((weak));

int main(int argc, char** argv) {
  if (cudaDeviceSynchronize) printf("weak: runtime present, sync %d\n", cudaDeviceSynchronize());
  else printf("weak: no runtime, CPU path\n");
  printf("weak cudaMemGetInfo: %s\n", cudaMemGetInfo ? "present" : "absent");
  void* p = dlsym(RTLD_DEFAULT, "cudaMalloc");
  printf("dlsym(RTLD_DEFAULT, cudaMalloc): %s\n", p ? "found" : "not found");
  if (argc > 1) {
    void* h = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
    printf("dlopen runtime: %s\n", h ? "loaded" : "failed");
    if (h) {
      int (*info)(size_t*, size_t*) = (int (*)(size_t*, size_t*))dlsym(RTLD_DEFAULT, "cudaMemGetInfo");
      size_t free_b = 0, total_b = 0;
      printf("after dlopen, cudaMemGetInfo: %s", info ? "found" : "not found");
      if (info) printf(", returns %d", info(&free_b, &total_b));
      printf("\n");
    }
  }
  return 0;
}
