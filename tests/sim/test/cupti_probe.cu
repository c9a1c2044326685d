// A real CUDA program that uses CUPTI's activity API as a profiler does, run on the simulated
// libcudart.so.13 + libcupti.so.13. It checks every record it gets against what the device
// model must have done and prints "FAIL ..." lines (exit 1) or key=value results (exit 0).
//
//   sim_cupti_probe records   kernels (<<<>>>, cudaLaunchKernel, driver cuLaunchKernel),
//                             pinned/pageable copies, memsets, API records, clock offset
//   sim_cupti_probe taken     cuptiSubscribe while "another profiler" holds CUPTI
//   sim_cupti_probe drops     a consumer that runs out of buffers
//   sim_cupti_probe cost      what a launch call costs with kinds off, device kinds on, all on,
//                             disabled again, and after cuptiFinalize
//   sim_cupti_probe detach    cuptiFinalize at a launch's exit callback, then attached again
//   sim_cupti_probe unsafe    cuptiFinalize with recorded work still running: aborts
//   sim_cupti_probe forced    a forced flush with work still running: its records without times
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <time.h>

__global__ void spin_kernel(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

namespace {

int g_failures = 0;
#define EXPECT(cond, ...)                                        \
  do {                                                           \
    if (!(cond)) {                                               \
      std::printf("FAIL line %d: %s: ", __LINE__, #cond);        \
      std::printf(__VA_ARGS__);                                  \
      std::printf("\n");                                         \
      ++g_failures;                                              \
    }                                                            \
  } while (0)
#define CK(x) EXPECT((x) == 0, "%s returned nonzero", #x)

uint64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// ---- the consumer: buffers, completed records --------------------------------------------
std::mutex g_mu;
std::vector<std::vector<uint8_t>> g_records;  // copies of every record, in buffer order
size_t g_buffer_size = 1 << 20;
int g_buffers_left = 1 << 30;  // how many buffers the consumer is willing to hand out
std::atomic<int> g_completed{0};

void CUPTIAPI on_request(uint8_t** buffer, size_t* size, size_t* max_records) {
  std::lock_guard<std::mutex> lk(g_mu);
  *max_records = 0;
  if (g_buffers_left-- <= 0) {
    *buffer = nullptr;
    *size = 0;
    return;
  }
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, g_buffer_size));
  *size = g_buffer_size;
}

void CUPTIAPI on_complete(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* rec = nullptr;
  std::lock_guard<std::mutex> lk(g_mu);
  CUptiResult r;
  while ((r = cuptiActivityGetNextRecord(buffer, valid, &rec)) == CUPTI_SUCCESS) {
    size_t n = rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ? sizeof(CUpti_ActivityKernel10)
               : rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY          ? sizeof(CUpti_ActivityMemcpy6)
               : rec->kind == CUPTI_ACTIVITY_KIND_MEMSET          ? sizeof(CUpti_ActivityMemset4)
                                                                  : sizeof(CUpti_ActivityAPI);
    const uint8_t* p = reinterpret_cast<const uint8_t*>(rec);
    g_records.emplace_back(p, p + n);
  }
  EXPECT(r == CUPTI_ERROR_MAX_LIMIT_REACHED, "end of buffer gave %d", int(r));
  std::free(buffer);
  ++g_completed;
}

template <class T>
const T* as(const std::vector<uint8_t>& r) { return reinterpret_cast<const T*>(r.data()); }

uint64_t offset_env() {
  const char* v = std::getenv("SIMGPU_CUPTI_CLOCK_OFFSET_NS");
  return v ? std::strtoull(v, nullptr, 10) : 1000000000000ull;
}

typedef CUresult(CUDAAPI* LaunchFn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    CUstream, void**, void**);

// ---- records ------------------------------------------------------------------------------
int records() {
  CUpti_SubscriberHandle sub = nullptr, sub2 = nullptr;
  CK(cuptiSubscribe(&sub, nullptr, nullptr));
  EXPECT(cuptiSubscribe(&sub2, nullptr, nullptr) == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, "second subscriber");
  CK(cuptiUnsubscribe(sub));
  CK(cuptiSubscribe(&sub, nullptr, nullptr));  // free again after unsubscribing
  CK(cuptiUnsubscribe(sub));

  CK(cuptiActivityRegisterCallbacks(on_request, on_complete));
  for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
                               CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER})
    CK(cuptiActivityEnable(k));

  // Clock: CUPTI time = CLOCK_MONOTONIC + the fixed offset.
  const uint64_t off = offset_env();
  uint64_t c = 0;
  const uint64_t h0 = mono_ns();
  CK(cuptiGetTimestamp(&c));
  const uint64_t h1 = mono_ns();
  EXPECT(c >= h0 + off && c <= h1 + off, "cuptiGetTimestamp %llu not in [%llu, %llu] + offset", (unsigned long long)c,
         (unsigned long long)h0, (unsigned long long)h1);

  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  void *dev, *pinned;
  const size_t big = 24000000, small = 6000000;
  CK(cudaMalloc(&dev, big));
  CK(cudaMallocHost(&pinned, big));
  std::vector<char> pageable(small);

  CUfunction fn = nullptr;
  LaunchFn drv = nullptr;
  cudaDriverEntryPointQueryResult q;
  CK(cudaGetFuncBySymbol(reinterpret_cast<cudaFunction_t*>(&fn), reinterpret_cast<const void*>(spin_kernel)));
  CK(cudaGetDriverEntryPointByVersion("cuLaunchKernel", reinterpret_cast<void**>(&drv), 12000, cudaEnableDefault, &q));
  EXPECT(drv && q == cudaDriverEntryPointSuccess, "driver entry point");
  void* none = nullptr;
  CK(cudaGetDriverEntryPointByVersion("cuNoSuchThing", &none, 12000, cudaEnableDefault, &q));
  EXPECT(!none && q == cudaDriverEntryPointSymbolNotFound, "unknown driver symbol");

  const uint64_t t_begin = mono_ns();
  spin_kernel<<<1, 1, 0, s>>>(2000000ull);  // runtime (<<<>>>)
  spin_kernel<<<1, 1, 0, s>>>(2000000ull);
  unsigned long long ns1 = 1000000ull;
  void* args1[] = {&ns1};
  CK(cudaLaunchKernel(reinterpret_cast<const void*>(spin_kernel), dim3(1), dim3(1), args1, 0, s));  // runtime
  unsigned long long ns3 = 3000000ull;
  void* args3[] = {&ns3};
  EXPECT(drv(fn, 1, 1, 1, 1, 1, 1, 0, reinterpret_cast<CUstream>(s), args3, nullptr) == CUDA_SUCCESS, "cuLaunchKernel");
  EXPECT(drv(fn, 1, 1, 1, 1, 1, 1, 0, reinterpret_cast<CUstream>(s), args3, nullptr) == CUDA_SUCCESS, "cuLaunchKernel");
  CK(cudaMemcpyAsync(dev, pinned, big, cudaMemcpyHostToDevice, s));            // pinned H2D: 1 ms
  CK(cudaMemcpy(dev, pageable.data(), small, cudaMemcpyHostToDevice));          // pageable H2D: 1 ms, blocks
  CK(cudaMemcpyAsync(pinned, dev, big, cudaMemcpyDeviceToHost, s));            // pinned D2H: 1 ms
  CK(cudaMemsetAsync(dev, 0, 2000000, s));                                      // 2 us
  CK(cudaStreamSynchronize(s));
  CK(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMSET));
  CK(cudaMemsetAsync(dev, 0, 1000, s));  // its API call is recorded, its device op is not
  CK(cudaDeviceSynchronize());
  // A kernel still running is not flushed: it shows up only once the device is done.
  unsigned long long ns30 = 30000000ull;
  void* args30[] = {&ns30};
  CK(cudaLaunchKernel(reinterpret_cast<const void*>(spin_kernel), dim3(1), dim3(1), args30, 0, s));
  CK(cuptiActivityFlushAll(0));
  size_t early = 0;
  {
    std::lock_guard<std::mutex> lk(g_mu);
    for (auto& r : g_records)
      if (as<CUpti_Activity>(r)->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
          as<CUpti_ActivityKernel10>(r)->end - as<CUpti_ActivityKernel10>(r)->start == ns30)
        ++early;
  }
  EXPECT(early == 0, "a running kernel was flushed");
  CK(cudaDeviceSynchronize());
  const uint64_t t_end = mono_ns();
  CK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));

  // ---- check every record ----
  std::map<uint32_t, const CUpti_ActivityAPI*> api;  // by correlation id
  std::map<std::string, int> count;
  std::vector<const CUpti_Activity*> device;
  std::lock_guard<std::mutex> lk(g_mu);
  for (auto& r : g_records) {
    const auto* a = as<CUpti_Activity>(r);
    switch (a->kind) {
      case CUPTI_ACTIVITY_KIND_RUNTIME:
      case CUPTI_ACTIVITY_KIND_DRIVER: {
        const auto* p = as<CUpti_ActivityAPI>(r);
        count[a->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? "runtime" : "driver"]++;
        EXPECT(!api.count(p->correlationId), "duplicate API correlation id %u", p->correlationId);
        api[p->correlationId] = p;
        EXPECT(p->start >= t_begin + off && p->end <= t_end + off && p->start <= p->end, "API record times");
        break;
      }
      default:
        device.push_back(a);
    }
  }
  for (const CUpti_Activity* a : device) {
    uint32_t corr = 0;
    uint64_t start = 0, end = 0;
    if (a->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(a);
      corr = k->correlationId, start = k->start, end = k->end;
      EXPECT(k->name && std::strstr(k->name, "spin_kernel"), "kernel name %s", k->name ? k->name : "(null)");
      const uint64_t d = end - start;
      EXPECT(d == 2000000 || d == 1000000 || d == 3000000 || d == ns30, "kernel duration %llu", (unsigned long long)d);
      EXPECT(k->streamId != 0 && k->completed == k->end, "kernel stream/completed");
      count[d == 3000000 ? "kernel_driver" : "kernel_runtime"]++;
      if (api.count(corr)) {
        const uint32_t want_cbid = d == 3000000 ? uint32_t(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) : uint32_t(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
        const CUpti_ActivityKind want_kind = d == 3000000 ? CUPTI_ACTIVITY_KIND_DRIVER : CUPTI_ACTIVITY_KIND_RUNTIME;
        EXPECT(api[corr]->cbid == want_cbid && api[corr]->kind == want_kind, "launch cbid %u kind %d", api[corr]->cbid,
               int(api[corr]->kind));
        // The launch call costs launch_us (4 us) of host time.
        EXPECT(api[corr]->end - api[corr]->start >= 4000, "launch call took %llu ns",
               (unsigned long long)(api[corr]->end - api[corr]->start));
      }
    } else if (a->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(a);
      corr = m->correlationId, start = m->start, end = m->end;
      EXPECT(end - start == 1000000, "copy duration %llu", (unsigned long long)(end - start));
      const bool async = m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
      if (m->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD && m->srcKind == CUPTI_ACTIVITY_MEMORY_KIND_PINNED) {
        count["h2d_pinned"]++;
        EXPECT(m->bytes == big && m->dstKind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE && async, "pinned h2d");
        EXPECT(api.count(corr) && api[corr]->cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, "h2d cbid");
      } else if (m->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD && m->srcKind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE) {
        count["h2d_pageable"]++;
        EXPECT(m->bytes == small && m->dstKind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE && !async && m->streamId == 0, "pageable h2d");
        EXPECT(api.count(corr) && api[corr]->cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, "cudaMemcpy cbid");
        // cudaMemcpy returns only after the copy: its API record covers the device time.
        EXPECT(api.count(corr) && api[corr]->end >= end, "blocking copy API ends before the copy");
      } else if (m->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH) {
        count["d2h_pinned"]++;
        EXPECT(m->bytes == big && m->srcKind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE &&
                   m->dstKind == CUPTI_ACTIVITY_MEMORY_KIND_PINNED && async, "pinned d2h");
      } else {
        EXPECT(false, "unexpected copy kind %d", int(m->copyKind));
      }
    } else if (a->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(a);
      corr = m->correlationId, start = m->start, end = m->end;
      count["memset"]++;
      EXPECT(m->bytes == 2000000 && end - start == 2000, "memset %llu bytes %llu ns", (unsigned long long)m->bytes,
             (unsigned long long)(end - start));
      EXPECT(api.count(corr) && api[corr]->cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, "memset cbid");
    } else {
      EXPECT(false, "unexpected record kind %d", int(a->kind));
      continue;
    }
    // Every device record pairs with the API call that enqueued it, which began before it.
    EXPECT(api.count(corr) == 1, "no API record for correlation id %u", corr);
    if (api.count(corr)) EXPECT(api[corr]->start <= start, "API call starts after its device op");
    // Device times are host times + offset: inside the probe's window.
    EXPECT(start >= t_begin + off && end <= t_end + off, "device record outside the run");
  }
  const int runtime_api = count["runtime"], driver_api = count["driver"];
  EXPECT(count["kernel_runtime"] == 4 && count["kernel_driver"] == 2, "kernels %d runtime, %d driver",
         count["kernel_runtime"], count["kernel_driver"]);
  EXPECT(count["h2d_pinned"] == 1 && count["h2d_pageable"] == 1 && count["d2h_pinned"] == 1, "copies");
  EXPECT(count["memset"] == 1, "memsets %d (the one after cuptiActivityDisable must be missing)", count["memset"]);
  // 4 launches + 3 copies + 2 memsets; 2 driver launches.
  EXPECT(runtime_api == 9 && driver_api == 2, "API records: %d runtime, %d driver", runtime_api, driver_api);
  std::printf("kernels=%d\ncopies=%d\nmemsets=%d\nruntime_api=%d\ndriver_api=%d\nrecords=%zu\n",
              count["kernel_runtime"] + count["kernel_driver"],
              count["h2d_pinned"] + count["h2d_pageable"] + count["d2h_pinned"], count["memset"], runtime_api, driver_api,
              g_records.size());
  return g_failures ? 1 : 0;
}

// ---- taken ----------------------------------------------------------------------------------
int taken() {
  CUpti_SubscriberHandle sub = nullptr;
  CUptiResult r = cuptiSubscribe(&sub, nullptr, nullptr);
  const char* name = nullptr;
  CK(cuptiGetResultString(r, &name));
  std::printf("subscribe=%d\n", int(r));
  std::printf("subscribe_name=%s\n", name ? name : "");
  EXPECT(r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, "got %d", int(r));
  // The program itself still runs.
  CK(cudaFree(0));
  return g_failures ? 1 : 0;
}

// ---- drops ----------------------------------------------------------------------------------
int drops() {
  g_buffer_size = 4 * sizeof(CUpti_ActivityKernel10);  // room for 4 kernel records
  g_buffers_left = 2;
  CK(cuptiActivityRegisterCallbacks(on_request, on_complete));
  CK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  for (int i = 0; i < 20; ++i) spin_kernel<<<1, 1, 0, s>>>(10000ull);
  CK(cudaStreamSynchronize(s));
  CK(cuptiActivityFlushAll(0));
  // The first full buffer goes back from CUPTI's thread; give it a moment.
  for (int i = 0; i < 1000 && g_completed.load() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  size_t dropped = 0, again = 1;
  CK(cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped));
  CK(cuptiActivityGetNumDroppedRecords(nullptr, 0, &again));
  std::lock_guard<std::mutex> lk(g_mu);
  std::printf("delivered=%zu\ndropped=%zu\nbuffers=%d\n", g_records.size(), dropped, g_completed.load());
  EXPECT(g_records.size() == 8 && dropped == 12, "delivered %zu dropped %zu", g_records.size(), dropped);
  EXPECT(again == 0, "the dropped count is reset by reading it");
  EXPECT(g_completed.load() == 2, "buffers completed %d", g_completed.load());
  return g_failures ? 1 : 0;
}

// ---- cost -----------------------------------------------------------------------------------
// The fastest of 40 rounds of 250 launches, in ns per launch. A round the scheduler cut into
// says nothing of the cost; rounds of ~0.7 ms, well under a time slice, leave most of them
// whole on a loaded machine (rounds of 2000 launches read 1.5 us high beside two builds).
double launch_ns(cudaStream_t s) {
  constexpr int kLaunches = 250;
  double best = 1e18;
  for (int round = 0; round < 40; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kLaunches; ++i) spin_kernel<<<1, 1, 0, s>>>(0ull);
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::nano>(t1 - t0).count() / kLaunches);
    CK(cudaStreamSynchronize(s));
  }
  return best;
}

int cost() {
  CK(cuptiActivityRegisterCallbacks(on_request, on_complete));
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  // Warmed first: the first launches fault in pages and start the simulator's device thread,
  // which read `off` ~150 ns high under load and shrank every difference below.
  launch_ns(s);
  const double off = launch_ns(s);
  CK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  const double device = launch_ns(s);
  CK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME));
  const double all = launch_ns(s);
  const bool hw = cuptiActivityEnableHWTrace(1) == CUPTI_SUCCESS;
  const double hw_all = hw ? launch_ns(s) : 0;
  CK(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  CK(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_RUNTIME));
  const double off_again = launch_ns(s);
  // Synchronized and flushed, as CUPTI asks of a cuptiFinalize outside a callback.
  CK(cudaDeviceSynchronize());
  CK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  CK(cuptiFinalize());
  const double finalized = launch_ns(s);
  std::printf("off_ns=%.0f\ndevice_ns=%.0f\nall_ns=%.0f\nhw_trace=%d\nhw_all_ns=%.0f\noff_again_ns=%.0f\nfinalized_ns=%.0f\n",
              off, device, all, hw ? 1 : 0, hw_all, off_again, finalized);
  return g_failures ? 1 : 0;
}

// ---- choice: API records of chosen calls only --------------------------------------------------
// Runtime API records so far, by callback id, after a forced flush.
std::map<uint32_t, int> runtime_records() {
  CK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  std::lock_guard<std::mutex> lk(g_mu);
  std::map<uint32_t, int> n;
  for (const auto& r : g_records)
    if (as<CUpti_Activity>(r)->kind == CUPTI_ACTIVITY_KIND_RUNTIME) ++n[as<CUpti_ActivityAPI>(r)->cbid];
  return n;
}

// Three launches, each checked as PyTorch checks it, and a memset.
void checked_launches(cudaStream_t s, void* dev) {
  for (int i = 0; i < 3; ++i) {
    spin_kernel<<<1, 1, 0, s>>>(0ull);
    CK(cudaGetLastError());
  }
  CK(cudaMemsetAsync(dev, 0, 16, s));
  CK(cudaStreamSynchronize(s));
}

int choice() {
  const uint32_t launch = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, check = CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020,
                 memset = CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020;
  const char* name = nullptr;
  CK(cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, launch, &name));
  EXPECT(name && std::strcmp(name, "cudaLaunchKernel_v7000") == 0, "name %s", name ? name : "(null)");
  EXPECT(cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, 0, &name) == CUPTI_ERROR_INVALID_PARAMETER, "cbid 0 named");
  EXPECT(cuptiActivityEnableRuntimeApi(CUPTI_RUNTIME_TRACE_CBID_SIZE, 1) == CUPTI_ERROR_INVALID_PARAMETER, "past the ids");
  CK(cuptiActivityRegisterCallbacks(on_request, on_complete));
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  void* dev = nullptr;
  CK(cudaMalloc(&dev, 16));
  CK(cuptiActivityEnableRuntimeApi(launch, 1));  // the launches alone
  checked_launches(s, dev);
  std::map<uint32_t, int> n = runtime_records();
  std::printf("chosen_launch=%d\nchosen_check=%d\nchosen_memset=%d\n", n[launch], n[check], n[memset]);
  CK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME));  // the kind: every call, the choice overridden
  checked_launches(s, dev);
  n = runtime_records();
  std::printf("kind_launch=%d\nkind_check=%d\nkind_memset=%d\n", n[launch], n[check], n[memset]);
  CK(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_RUNTIME));  // and off: the choice gone with it
  checked_launches(s, dev);
  n = runtime_records();
  std::printf("off_launch=%d\noff_check=%d\noff_memset=%d\n", n[launch], n[check], n[memset]);
  return g_failures ? 1 : 0;
}

// ---- detach ---------------------------------------------------------------------------------
std::atomic<bool> g_detach{false};
std::atomic<int> g_finalized{0}, g_callbacks{0};

void CUPTIAPI detach_at_exit(void*, CUpti_CallbackDomain domain, CUpti_CallbackId, const void* data) {
  ++g_callbacks;
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  EXPECT(domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API, "domain %d", int(domain));
  EXPECT(cb->callbackSite == CUPTI_API_EXIT, "site %d", int(cb->callbackSite));
  if (g_detach.exchange(false) && cuptiFinalize() == CUPTI_SUCCESS) ++g_finalized;
}

size_t kernel_records() {
  std::lock_guard<std::mutex> lk(g_mu);
  size_t n = 0;
  for (const auto& r : g_records) n += as<CUpti_Activity>(r)->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  return n;
}

int detach() {
  CK(cuptiActivityRegisterCallbacks(on_request, on_complete));
  CK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  for (int i = 0; i < 10; ++i) spin_kernel<<<1, 1, 0, s>>>(0ull);
  CK(cudaStreamSynchronize(s));
  CK(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  CK(cuptiActivityFlushAll(0));
  EXPECT(kernel_records() == 10, "before the detach: %zu kernels", kernel_records());
  // The detach as a tool arms it from its own thread: the job's next call's exit does it.
  CUpti_SubscriberHandle sub = nullptr;
  CK(cuptiSubscribe(&sub, detach_at_exit, nullptr));
  CK(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API));
  g_detach = true;
  spin_kernel<<<1, 1, 0, s>>>(0ull);
  EXPECT(g_finalized == 1, "finalized %d times after %d callbacks", g_finalized.load(), g_callbacks.load());
  const int callbacks = g_callbacks;
  spin_kernel<<<1, 1, 0, s>>>(0ull);
  EXPECT(g_callbacks == callbacks, "the subscriber went with the detach: %d callbacks", g_callbacks - callbacks);
  CUpti_SubscriberHandle again = nullptr;
  CK(cuptiSubscribe(&again, nullptr, nullptr));  // free again
  CK(cuptiUnsubscribe(again));
  // Attached again by the activity calls: the callbacks are CUPTI's to forget, so again.
  EXPECT(cuptiActivityFlushAll(0) == CUPTI_SUCCESS, "flush after the detach");
  CK(cuptiActivityRegisterCallbacks(on_request, on_complete));
  CK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  for (int i = 0; i < 5; ++i) spin_kernel<<<1, 1, 0, s>>>(0ull);
  CK(cudaStreamSynchronize(s));
  CK(cuptiActivityFlushAll(0));
  std::printf("finalized=%d\nkernels=%zu\n", g_finalized.load(), kernel_records());
  EXPECT(kernel_records() == 15, "after attaching again: %zu kernels", kernel_records());
  return g_failures ? 1 : 0;
}

// A flush leaves unfinished work in CUPTI; a forced one hands it back without times (CUPTI's
// incomplete records), and its end is never reported after.
int forced() {
  CK(cuptiActivityRegisterCallbacks(on_request, on_complete));
  CK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  for (int i = 0; i < 3; ++i) spin_kernel<<<1, 1, 0, s>>>(0ull);
  spin_kernel<<<1, 1, 0, s>>>(300000000ull);  // 0.3 s: running through both flushes
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CK(cuptiActivityFlushAll(0));
  const size_t finished = kernel_records();
  CK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  const size_t forced = kernel_records();
  CK(cudaStreamSynchronize(s));
  CK(cuptiActivityFlushAll(0));
  size_t timed = 0, untimed = 0;
  {
    std::lock_guard<std::mutex> lk(g_mu);
    for (const auto& r : g_records) {
      if (as<CUpti_Activity>(r)->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
      const auto* k = as<CUpti_ActivityKernel10>(r);
      if (k->start == 0 && k->end == 0) ++untimed;
      else if (k->start != 0 && k->end >= k->start) ++timed;
    }
  }
  std::printf("finished=%zu\nforced=%zu\nafter=%zu\ntimed=%zu\nuntimed=%zu\n", finished, forced, kernel_records(),
              timed, untimed);
  EXPECT(finished == 3, "a plain flush: %zu kernels", finished);
  EXPECT(forced == 4 && untimed == 1 && timed == 3, "forced: %zu kernels, %zu without times", forced, untimed);
  EXPECT(kernel_records() == 4, "the running kernel's end reported after the forced flush");
  return g_failures ? 1 : 0;
}

// Recorded work still running, nothing flushed: not what CUPTI allows outside a callback.
int unsafe() {
  CK(cuptiActivityRegisterCallbacks(on_request, on_complete));
  CK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  spin_kernel<<<1, 1>>>(200000000ull);
  cuptiFinalize();
  std::printf("survived\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "records") return records();
  if (mode == "taken") return taken();
  if (mode == "drops") return drops();
  if (mode == "cost") return cost();
  if (mode == "detach") return detach();
  if (mode == "unsafe") return unsafe();
  if (mode == "forced") return forced();
  if (mode == "choice") return choice();
  std::fprintf(stderr, "usage: sim_cupti_probe records|taken|drops|cost|detach|unsafe|forced|choice\n");
  return 2;
}
