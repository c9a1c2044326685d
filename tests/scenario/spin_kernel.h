// The scenario's kernels: real __global__ kernels that run for a requested time.
#pragma once

#include <cuda_runtime_api.h>

namespace gpuwatch::scenario {

// Launches one spin kernel (<<<1, 1, 0, stream>>>) that runs for `ns` nanoseconds.
// Errors are left for cudaGetLastError(): the launch is all this call does, so a
// stopwatch around it measures exactly the launch call.
void launch_spin(unsigned long long ns, cudaStream_t stream);

}  // namespace gpuwatch::scenario
