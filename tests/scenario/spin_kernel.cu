// See spin_kernel.h.
//
// The device name must contain "spin": the simulated GPU (tests/sim) recognises such
// kernels and takes their first argument (unsigned long long ns) as their duration, so the
// same launch means the same time on the simulator and on a real GPU.
#include "spin_kernel.h"

namespace gpuwatch::scenario {

// %globaltimer is the GPU's nanosecond clock; spinning on it gives a duration independent
// of the clock rate and the architecture. One thread is enough: the kernel only occupies
// time, which is what the scenarios describe.
__global__ void gpuwatch_spin_kernel(unsigned long long ns) {
  unsigned long long start;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  unsigned long long now = start;
  while (now - start < ns) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
}

void launch_spin(unsigned long long ns, cudaStream_t stream) {
  gpuwatch_spin_kernel<<<1, 1, 0, stream>>>(ns);
}

}  // namespace gpuwatch::scenario
