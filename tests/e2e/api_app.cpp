// A CUDA program that makes every call of the wider runtime surface gpuwatch hooks (pitched,
// peer and symbol copies, memsets, cooperative launches, cross-stream waits, host functions,
// polling loops, stream capture and graph launches, an NCCL all-reduce captured into the
// graph and one run eagerly, launches through the driver's functions taken from libcuda.so.1
// by dlsym as Triton's launcher takes them), a known number of times, and prints
// what it did as one JSON line: the e2e test compares the summary's host figures with it.
// Built by the host compiler: its kernel is registered the way nvcc's module constructor
// registers one (a host stub and a device name with "spin", which the simulator times by
// its first argument, in ns).
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <utility>

extern "C" {
void** __cudaRegisterFatBinary(void* fat);
void __cudaRegisterFatBinaryEnd(void** handle);
void __cudaRegisterFunction(void** handle, const char* host_fun, char* device_fun, const char* device_name,
                            int thread_limit, uint3* tid, uint3* bid, dim3* bdim, dim3* gdim, int* wsize);
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t exec, cudaStream_t stream);
}

namespace {

void api_app_spin_stub() {}  // the kernel's host stub: its address names the kernel
char g_symbol[4096];         // stands for a __device__ variable (the simulator keeps no data)

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

void Check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "api_app: %s: %s\n", what, cudaGetErrorString(e));
  std::exit(3);
}

cudaError_t Spin(cudaStream_t s, unsigned long long ns, bool cooperative = false) {
  void* args[] = {&ns};
  const void* f = reinterpret_cast<const void*>(&api_app_spin_stub);
  return cooperative ? cudaLaunchCooperativeKernel(f, dim3(1), dim3(1), args, 0, s)
                     : cudaLaunchKernel(f, dim3(1), dim3(1), args, 0, s);
}

void HostFunc(void* p) { static_cast<std::atomic<int>*>(p)->fetch_add(1); }

}  // namespace

int main() {
  static char fat[16];
  void** module = __cudaRegisterFatBinary(fat);
  __cudaRegisterFunction(module, reinterpret_cast<const char*>(&api_app_spin_stub), nullptr, "api_app_spin_kernel",
                         -1, nullptr, nullptr, nullptr, nullptr, nullptr);
  __cudaRegisterFatBinaryEnd(module);

  constexpr int kRounds = 3;
  constexpr size_t kW = 1024, kH = 16;  // pitched copies: 16 KiB
  cudaStream_t s1, s2;
  cudaEvent_t ev;
  void *dev = nullptr, *dev2 = nullptr, *pinned = nullptr;
  Check(cudaSetDevice(0), "cudaSetDevice");
  Check(cudaStreamCreate(&s1), "cudaStreamCreate");
  Check(cudaStreamCreate(&s2), "cudaStreamCreate");
  Check(cudaEventCreate(&ev), "cudaEventCreate");
  Check(cudaMalloc(&dev, 1 << 20), "cudaMalloc");
  Check(cudaMalloc(&dev2, 1 << 20), "cudaMalloc");
  Check(cudaMallocHost(&pinned, 1 << 20), "cudaMallocHost");

  unsigned long long h2d = 0, h2d_bytes = 0, d2h = 0, d2h_bytes = 0, d2d = 0, d2d_bytes = 0, blocking = 0;
  unsigned long long memsets = 0, memset_bytes = 0, launches = 0, waits = 0, host_funcs = 0;
  unsigned long long stream_polls = 0, event_polls = 0;
  double stream_poll_s = 0, event_poll_s = 0;
  std::atomic<int> host_func_ran{0};
  cudaMemcpy3DParms up{}, down{};
  up.srcPtr = cudaPitchedPtr{pinned, 512, 512, 4};
  up.dstPtr = cudaPitchedPtr{dev, 512, 512, 4};
  up.extent = cudaExtent{512, 4, 2};  // 4 KiB
  up.kind = cudaMemcpyHostToDevice;
  down = up;
  std::swap(down.srcPtr, down.dstPtr);
  down.kind = cudaMemcpyDeviceToHost;

  for (int r = 0; r < kRounds; ++r) {
    // Copies, synchronous (the host-side ones block) and stream-ordered.
    Check(cudaMemcpy2D(dev, kW, pinned, kW, kW, kH, cudaMemcpyHostToDevice), "cudaMemcpy2D");
    Check(cudaMemcpy2DAsync(pinned, kW, dev, kW, kW, kH / 2, cudaMemcpyDeviceToHost, s1), "cudaMemcpy2DAsync");
    Check(cudaMemcpy3D(&up), "cudaMemcpy3D");
    Check(cudaMemcpy3DAsync(&down, s1), "cudaMemcpy3DAsync");
    h2d += 2, h2d_bytes += kW * kH + 4096, d2h += 2, d2h_bytes += kW * kH / 2 + 4096, blocking += 2;
    Check(cudaMemcpyPeer(dev2, 0, dev, 0, 65536), "cudaMemcpyPeer");
    Check(cudaMemcpyPeerAsync(dev2, 0, dev, 0, 32768, s1), "cudaMemcpyPeerAsync");
    d2d += 2, d2d_bytes += 65536 + 32768;
    Check(cudaMemcpyToSymbol(g_symbol, pinned, 256, 0, cudaMemcpyHostToDevice), "cudaMemcpyToSymbol");
    Check(cudaMemcpyFromSymbol(pinned, g_symbol, 128, 0, cudaMemcpyDeviceToHost), "cudaMemcpyFromSymbol");
    Check(cudaMemcpyToSymbolAsync(g_symbol, pinned, 512, 0, cudaMemcpyHostToDevice, s1), "cudaMemcpyToSymbolAsync");
    Check(cudaMemcpyFromSymbolAsync(pinned, g_symbol, 64, 0, cudaMemcpyDeviceToHost, s1), "cudaMemcpyFromSymbolAsync");
    h2d += 2, h2d_bytes += 256 + 512, d2h += 2, d2h_bytes += 128 + 64, blocking += 2;

    // Memsets.
    Check(cudaMemset(dev, 0, 4096), "cudaMemset");
    Check(cudaMemsetAsync(dev, 0, 8192, s1), "cudaMemsetAsync");
    Check(cudaMemset2D(dev, kW, 0, kW, 8), "cudaMemset2D");
    Check(cudaMemset2DAsync(dev, kW, 0, kW, 4, s1), "cudaMemset2DAsync");
    memsets += 4, memset_bytes += 4096 + 8192 + kW * 8 + kW * 4;

    // Launches, a cross-stream wait, a host function.
    Check(Spin(s1, 200'000, true), "cudaLaunchCooperativeKernel");
    Check(Spin(s1, 100'000), "cudaLaunchKernel");
    launches += 2;
    Check(cudaEventRecord(ev, s1), "cudaEventRecord");
    Check(cudaStreamWaitEvent(s2, ev, 0), "cudaStreamWaitEvent");
    Check(cudaLaunchHostFunc(s2, HostFunc, &host_func_ran), "cudaLaunchHostFunc");
    waits += 1, host_funcs += 1;

    // Polling loops: a 3 ms kernel waited for with cudaStreamQuery, then with cudaEventQuery.
    Check(Spin(s1, 3'000'000), "cudaLaunchKernel");
    auto t0 = Clock::now();
    cudaError_t q;
    while ((q = cudaStreamQuery(s1)) == cudaErrorNotReady) std::this_thread::sleep_for(std::chrono::microseconds(50));
    stream_poll_s += Since(t0);
    Check(q, "cudaStreamQuery");
    Check(Spin(s1, 3'000'000), "cudaLaunchKernel");
    Check(cudaEventRecord(ev, s1), "cudaEventRecord");
    t0 = Clock::now();
    while ((q = cudaEventQuery(ev)) == cudaErrorNotReady) std::this_thread::sleep_for(std::chrono::microseconds(50));
    event_poll_s += Since(t0);
    Check(q, "cudaEventQuery");
    launches += 2, stream_polls += 1, event_polls += 1;
  }

  // Triton's launcher: cuLaunchKernelEx from libcuda.so.1 by dlsym on the kernel's CUfunction
  // (and cuLaunchKernel, as older launchers do).
  constexpr int kDriverLaunches = 4;
  void* libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  const auto launch_ex = libcuda ? reinterpret_cast<decltype(&cuLaunchKernelEx)>(dlsym(libcuda, "cuLaunchKernelEx")) : nullptr;
  const auto launch = libcuda ? reinterpret_cast<decltype(&cuLaunchKernel)>(dlsym(libcuda, "cuLaunchKernel")) : nullptr;
  if (!launch_ex || !launch) {
    std::fprintf(stderr, "api_app: libcuda.so.1's launches: %s\n", libcuda ? "not found" : dlerror());
    return 7;
  }
  cudaFunction_t fn = nullptr;
  Check(cudaGetFuncBySymbol(&fn, reinterpret_cast<const void*>(&api_app_spin_stub)), "cudaGetFuncBySymbol");
  for (int i = 0; i < kDriverLaunches / 2; ++i) {
    unsigned long long ns = 20'000;
    void* args[] = {&ns};
    CUlaunchConfig config{};
    config.gridDimX = config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = config.blockDimY = config.blockDimZ = 1;
    config.hStream = reinterpret_cast<CUstream>(s1);
    if (launch_ex(&config, reinterpret_cast<CUfunction>(fn), args, nullptr) != CUDA_SUCCESS ||
        launch(reinterpret_cast<CUfunction>(fn), 1, 1, 1, 1, 1, 1, 0, reinterpret_cast<CUstream>(s1), args, nullptr) !=
            CUDA_SUCCESS) {
      std::fprintf(stderr, "api_app: a driver launch failed\n");
      return 7;
    }
  }
  // The driver's copies and syncs, from the same library (as XLA and driver-API code use
  // them): counted with the runtime's, under the runtime calls' names.
  {
    auto sym = [&](const char* name) { return dlsym(libcuda, name); };
    const auto htod = reinterpret_cast<decltype(&cuMemcpyHtoD_v2)>(sym("cuMemcpyHtoD_v2"));
    const auto htod_async = reinterpret_cast<decltype(&cuMemcpyHtoDAsync_v2)>(sym("cuMemcpyHtoDAsync_v2"));
    const auto dtoh = reinterpret_cast<decltype(&cuMemcpyDtoH_v2)>(sym("cuMemcpyDtoH_v2"));
    const auto dtoh_async = reinterpret_cast<decltype(&cuMemcpyDtoHAsync_v2)>(sym("cuMemcpyDtoHAsync_v2"));
    const auto dtod = reinterpret_cast<decltype(&cuMemcpyDtoD_v2)>(sym("cuMemcpyDtoD_v2"));
    const auto dtod_async = reinterpret_cast<decltype(&cuMemcpyDtoDAsync_v2)>(sym("cuMemcpyDtoDAsync_v2"));
    const auto uva = reinterpret_cast<CUresult(CUDAAPI*)(CUdeviceptr, CUdeviceptr, size_t)>(sym("cuMemcpy"));
    const auto stream_sync = reinterpret_cast<CUresult(CUDAAPI*)(CUstream)>(sym("cuStreamSynchronize"));
    const auto ctx_sync = reinterpret_cast<decltype(&cuCtxSynchronize)>(sym("cuCtxSynchronize"));
    const auto event_sync = reinterpret_cast<decltype(&cuEventSynchronize)>(sym("cuEventSynchronize"));
    if (!htod || !htod_async || !dtoh || !dtoh_async || !dtod || !dtod_async || !uva || !stream_sync || !ctx_sync ||
        !event_sync) {
      std::fprintf(stderr, "api_app: libcuda.so.1's copies and syncs: not found\n");
      return 7;
    }
    const auto d = reinterpret_cast<CUdeviceptr>(dev), d2 = reinterpret_cast<CUdeviceptr>(dev2);
    const auto h = reinterpret_cast<CUdeviceptr>(pinned);
    const auto cs = reinterpret_cast<CUstream>(s1);
    Check(cudaEventRecord(ev, s1), "cudaEventRecord");
    if (htod(d, pinned, 2048) || htod_async(d, pinned, 1024, cs) || dtoh(pinned, d, 512) || dtoh_async(pinned, d, 256, cs) ||
        dtod(d2, d, 8192) || dtod_async(d2, d, 4096, cs) || uva(d, h, 128) || stream_sync(cs) ||
        event_sync(reinterpret_cast<CUevent>(ev)) || ctx_sync()) {
      std::fprintf(stderr, "api_app: a driver copy or sync failed\n");
      return 7;
    }
    h2d += 3, h2d_bytes += 2048 + 1024 + 128, d2h += 2, d2h_bytes += 512 + 256, d2d += 2, d2d_bytes += 8192 + 4096;
    blocking += 3;  // cuMemcpyHtoD, cuMemcpyDtoH, cuMemcpy
  }

  // dlsym(RTLD_NEXT) searches after its caller whoever else defines dlsym: from this
  // program, the next cudaLaunchKernel is the first one (a profiler's, else the runtime's).
  if (dlsym(RTLD_NEXT, "cudaLaunchKernel") != dlsym(RTLD_DEFAULT, "cudaLaunchKernel")) {
    std::fprintf(stderr, "api_app: dlsym(RTLD_NEXT) searched after another object than this program\n");
    return 8;
  }

  // A graph: 3 kernels, a memset and a copy captured on s1 (recorded, not run), launched 3 times.
  constexpr int kGraphKernels = 3, kGraphLaunches = 3;
  Check(cudaStreamBeginCapture(s1, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  for (int i = 0; i < kGraphKernels; ++i) Check(Spin(s1, 50'000), "cudaLaunchKernel (captured)");
  Check(cudaMemsetAsync(dev, 0, 4096, s1), "cudaMemsetAsync (captured)");
  Check(cudaMemcpyAsync(dev2, dev, 4096, cudaMemcpyDeviceToDevice, s1), "cudaMemcpyAsync (captured)");
  // One rank's communicator: its all-reduce is recorded into the graph (not run now).
  ncclUniqueId id;
  ncclComm_t comm = nullptr;
  if (ncclGetUniqueId(&id) != ncclSuccess || ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess) {
    std::fprintf(stderr, "api_app: NCCL init failed\n");
    return 5;
  }
  if (ncclAllReduce(dev, dev, 1024, ncclFloat, ncclSum, comm, s1) != ncclSuccess) return 6;
  cudaGraph_t graph = nullptr;
  Check(cudaStreamEndCapture(s1, &graph), "cudaStreamEndCapture");
  cudaGraphExec_t exec = nullptr;
  Check(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
  Check(cudaGraphLaunch(exec, s1), "cudaGraphLaunch");
  Check(cudaGraphLaunch(exec, s1), "cudaGraphLaunch");
  Check(cudaGraphLaunch_ptsz(exec, s1), "cudaGraphLaunch_ptsz");
  Check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  // The simulator runs host functions on a thread of its own that the sync does not wait for.
  for (int i = 0; i < 1000 && host_func_ran.load() < kRounds; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (host_func_ran.load() != kRounds) {
    std::fprintf(stderr, "api_app: %d host functions ran, want %d\n", host_func_ran.load(), kRounds);
    return 4;
  }
  // The same all-reduce run eagerly: the one executed collective.
  if (ncclAllReduce(dev, dev, 1024, ncclFloat, ncclSum, comm, s1) != ncclSuccess) return 6;
  Check(cudaStreamSynchronize(s1), "cudaStreamSynchronize");
  ncclCommDestroy(comm);
  Check(cudaGraphExecDestroy(exec), "cudaGraphExecDestroy");
  Check(cudaGraphDestroy(graph), "cudaGraphDestroy");

  std::printf(
      "{\"h2d\": %llu, \"h2d_bytes\": %llu, \"d2h\": %llu, \"d2h_bytes\": %llu, \"d2d\": %llu, \"d2d_bytes\": %llu, "
      "\"blocking_copies\": %llu, \"memsets\": %llu, \"memset_bytes\": %llu, \"launches\": %llu, "
      "\"stream_waits\": %llu, \"host_funcs\": %llu, \"stream_polls\": %llu, \"stream_poll_s\": %.6f, "
      "\"event_polls\": %llu, \"event_poll_s\": %.6f, \"graph_launches\": %d, \"graph_kernels\": %d, "
      "\"captured_calls\": %d, \"captures\": 1, \"instantiations\": 1, \"allreduces\": 2, "
      "\"captured_allreduces\": 1, \"driver_launches\": %d, \"stream_syncs\": 2, \"device_syncs\": 2, "
      "\"event_syncs\": 1}\n",
      h2d, h2d_bytes, d2h, d2h_bytes, d2d, d2d_bytes, blocking, memsets, memset_bytes, launches, waits, host_funcs,
      stream_polls, stream_poll_s, event_polls, event_poll_s, kGraphLaunches, kGraphLaunches * kGraphKernels,
      kGraphKernels + 3, kDriverLaunches);
  return 0;
}
