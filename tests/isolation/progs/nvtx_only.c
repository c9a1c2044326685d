/* NVTX ranges and no CUDA (argv[1] absent), or NVTX around the CUDA runtime's calls
 * (argv[1]: the runtime to dlopen). Prints what NVTX returned. */
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>

int main(int argc, char** argv) {
  int (*sync)(void) = NULL;
  if (argc > 1) {
    void* rt = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
    if (!rt) return 2;
    sync = (int (*)(void))dlsym(rt, "cudaDeviceSynchronize");
    if (!sync) return 3;
    sync();
  }
  for (int step = 0; step < 3; ++step) {
    const int a = nvtxRangePushA("step");
    const int b = nvtxRangePushA("forward");
    if (sync) sync();
    const int c = nvtxRangePop();
    const int d = nvtxRangePop();
    const int e = nvtxRangePop(); /* one pop too many */
    printf("step %d: push %d %d pop %d %d %d\n", step, a, b, c, d, e);
  }
  return 0;
}
