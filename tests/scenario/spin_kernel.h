// The scenario's kernels: real __global__ kernels that run for a requested time.
#pragma once

#include <cuda_runtime_api.h>

namespace gpuwatch::scenario {

// Launches one spin kernel (<<<blocks, 1, 0, stream>>>) that runs for `ns` nanoseconds (every
// block spins that long, so the grid's size changes how many SMs it holds, not its time).
// Errors are left for cudaGetLastError(): the launch is all this call does, so a
// stopwatch around it measures exactly the launch call.
void launch_spin(unsigned long long ns, unsigned blocks, cudaStream_t stream);

// The same kernel launched as cuBLAS or Triton launch theirs: through the driver's
// cuLaunchKernel, found with cudaGetDriverEntryPointByVersion, on the CUfunction of
// cudaGetFuncBySymbol. Runtime-API hooks (cudaLaunchKernel) never see these launches; only
// CUPTI's DRIVER records do. Works on a real GPU too.
// init_library_launch resolves both once (call it after cudaSetDevice); the launch returns
// the CUresult as an int (0 = CUDA_SUCCESS) and, like launch_spin, does nothing else.
cudaError_t init_library_launch();
int launch_spin_library(unsigned long long ns, unsigned blocks, cudaStream_t stream);

// The same kernel launched as Triton's launcher launches its own: cuLaunchKernelEx taken from
// libcuda.so.1 with dlopen + dlsym, on the same CUfunction, the grid and stream in a
// CUlaunchConfig. init_triton_launch resolves it once; the launch returns the CUresult.
cudaError_t init_triton_launch();
int launch_spin_triton(unsigned long long ns, unsigned blocks, cudaStream_t stream);

}  // namespace gpuwatch::scenario
