// CUPTI loaded, its activity buffers handled and parsed, its clock mapped onto CLOCK_MONOTONIC.
#include "enrich/cupti_reader.h"

#include <cupti.h>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <vector>

#include "record/collective_timer.h"
#include "record/record.h"
#include "record/registry.h"
#include "record/stamp_clock.h"

namespace gpuwatch::inject {
namespace {

constexpr size_t kBufferBytes = 4u << 20;
constexpr size_t kMaxBuffers = 16;  // 64 MiB at most in CUPTI's hands and ours
constexpr int64_t kOffsetHysteresisNs = 2000;

struct CuptiApi {
  decltype(&cuptiSubscribe) subscribe;
  decltype(&cuptiUnsubscribe) unsubscribe;
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks;
  decltype(&cuptiActivityEnable) enable;
  decltype(&cuptiActivityDisable) disable;
  decltype(&cuptiActivityFlushAll) flush_all;
  decltype(&cuptiActivityGetNextRecord) next_record;
  decltype(&cuptiGetTimestamp) timestamp;
  decltype(&cuptiActivityEnableHWTrace) enable_hw_trace;  // CUDA 13 CUPTI; null in older ones
};

struct CuptiState {
  // Held around turning kinds on or off (the budget's windows, a hand-over), so a window
  // never turns them back on after the application's profiler took CUPTI. Taken before mu.
  std::mutex control;
  std::mutex mu;  // guards everything below; never held while calling into CUPTI
  bool started = false;
  bool handed_over = false;  // an application profiler took CUPTI
  bool recording = true;     // the kinds are enabled (the overhead budget turns them off between windows)
  bool hw_trace = false;
  bool app_active = false;   // ... before gpuwatch started
  CUpti_BuffersCallbackRequestFunc app_request = nullptr;
  CUpti_BuffersCallbackCompleteFunc app_complete = nullptr;
  CuptiReader::Source source = CuptiReader::Source::kUnknown;
  std::string detail;
  CuptiApi api{};
  std::deque<std::pair<uint8_t*, size_t>> completed;  // buffer, valid bytes
  std::vector<uint8_t*> free_buffers;
  size_t buffers = 0;
  // CLOCK_MONOTONIC = CUPTI time - offset; refreshed by the sender thread.
  std::atomic<int64_t> offset{0};
  uint64_t last_calibration_ns = 0;
  uint64_t last_flush_ns = 0;
  uint64_t started_ns = 0;
};

// The record kinds gpuwatch enables: the device's work, host waits, and the runtime/driver
// calls that enqueued work (to tie kernels launched around the hooks to their host call).
// GPUWATCH_CUPTI_KINDS=kernel,memcpy,memset,sync,runtime,driver picks a subset (to measure
// what each kind costs).
std::vector<CUpti_ActivityKind> Kinds() {
  static const std::vector<CUpti_ActivityKind> kinds = [] {
    const std::pair<const char*, CUpti_ActivityKind> all[] = {
        {"kernel", CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL}, {"memcpy", CUPTI_ACTIVITY_KIND_MEMCPY},
        {"memset", CUPTI_ACTIVITY_KIND_MEMSET},            {"sync", CUPTI_ACTIVITY_KIND_SYNCHRONIZATION},
        {"runtime", CUPTI_ACTIVITY_KIND_RUNTIME},          {"driver", CUPTI_ACTIVITY_KIND_DRIVER}};
    const char* want = std::getenv("GPUWATCH_CUPTI_KINDS");
    std::vector<CUpti_ActivityKind> out;
    for (auto& [name, kind] : all) {
      if (!want || !*want) {
        out.push_back(kind);
        continue;
      }
      const std::string list = std::string(",") + want + ",";
      if (list.find(std::string(",") + name + ",") != std::string::npos) out.push_back(kind);
    }
    return out;
  }();
  return kinds;
}

CuptiState& S() {
  static CuptiState* s = new CuptiState;  // leaked: CUPTI may call back during exit
  return *s;
}

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  CuptiState& s = S();
  *max_records = 0;
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.free_buffers.empty()) {
    *buffer = s.free_buffers.back();
    s.free_buffers.pop_back();
  } else if (s.buffers < kMaxBuffers) {
    *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
    if (*buffer) ++s.buffers;
  } else {
    *buffer = nullptr;  // bounded: CUPTI drops and counts records until we return buffers
  }
  *size = *buffer ? kBufferBytes : 0;
}

void CUPTIAPI BufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CuptiState& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  s.completed.emplace_back(buffer, valid);
}

template <typename F>
F Sym(void* lib, const char* name) {
  return reinterpret_cast<F>(dlsym(lib, name));
}

void Calibrate(CuptiState& s) {
  // (monotonic, cupti, monotonic): the midpoint of the two host reads is when CUPTI's
  // clock was read, to within half the bracket.
  uint64_t best_bracket = UINT64_MAX;
  int64_t best = 0;
  for (int i = 0; i < 5; ++i) {
    uint64_t c = 0;
    const uint64_t a = NowNs();
    if (s.api.timestamp(&c) != CUPTI_SUCCESS) return;
    const uint64_t b = NowNs();
    if (b - a < best_bracket) {
      best_bracket = b - a;
      best = static_cast<int64_t>(c) - static_cast<int64_t>(a + (b - a) / 2);
    }
  }
  // Each estimate is off by up to half its bracket; moving the mapping by that jitter at
  // every calibration would split back-to-back device work into tiny false gaps. Follow
  // the clocks only when they have really drifted apart.
  const int64_t current = s.offset.load(std::memory_order_relaxed);
  if (s.last_calibration_ns == 0 || std::llabs(best - current) > kOffsetHysteresisNs) {
    s.offset.store(best, std::memory_order_relaxed);
  }
  s.last_calibration_ns = NowNs();
}

uint64_t ToMono(const CuptiState& s, uint64_t cupti_ns) {
  return static_cast<uint64_t>(static_cast<int64_t>(cupti_ns) - s.offset.load(std::memory_order_relaxed));
}

uint8_t CopyKindOf(uint8_t cupti_kind) {
  switch (cupti_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return kCopyH2D;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return kCopyD2H;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return kCopyD2D;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return kCopyH2H;
    default: return 0;
  }
}

// The fields every device record (kernel, memcpy, memset) has under the same names.
template <typename R>
void DeviceFields(const CuptiState& s, const R* r, ActivityRecord& a) {
  a.start_ns = ToMono(s, r->start);
  a.end_ns = ToMono(s, r->end);
  a.correlation_id = r->correlationId;
  a.stream = r->streamId;
  a.device = static_cast<int32_t>(r->deviceId);
  a.graph_id = r->graphId;
  a.graph_node_id = r->graphNodeId;
}

// A kernel's launch geometry: how many SMs its grid can fill (the collector's SM fill).
// CUPTI's fields are signed; a negative one (never seen) reads as 0, unknown.
void KernelGeometry(const CUpti_ActivityKernel10* k, ActivityRecord& a) {
  auto u = [](int32_t v) { return v > 0 ? static_cast<uint32_t>(v) : 0u; };
  a.grid[0] = u(k->gridX), a.grid[1] = u(k->gridY), a.grid[2] = u(k->gridZ);
  a.block[0] = u(k->blockX), a.block[1] = u(k->blockY), a.block[2] = u(k->blockZ);
  a.registers_per_thread = k->registersPerThread;
  a.static_shared_bytes = u(k->staticSharedMemory);
  a.dynamic_shared_bytes = u(k->dynamicSharedMemory);
}

// Parses one completed buffer. Only the record kinds gpuwatch enabled are read; CUPTI's
// own overhead records (and anything else) are skipped, never counted as GPU work.
void Parse(CuptiState& s, uint8_t* buffer, size_t valid, const std::function<void(const ActivityRecord&)>& fn) {
  CUpti_Activity* rec = nullptr;
  while (s.api.next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
    ActivityRecord a{};
    switch (rec->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
        a.kind = kActKernel;
        DeviceFields(s, k, a);
        a.name_id = Kernels().Intern(k->name);
        a.comm_kernel = k->name && std::strstr(k->name, "nccl") != nullptr;
        KernelGeometry(k, a);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
        a.kind = kActMemcpy;
        DeviceFields(s, m, a);
        a.bytes = m->bytes;
        a.copy_kind = CopyKindOf(m->copyKind);
        if (m->srcKind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE || m->dstKind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE) {
          a.flags |= kFlagPageable;
        }
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(rec);
        a.kind = kActMemset;
        DeviceFields(s, m, a);
        a.bytes = m->bytes;
        break;
      }
      case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
        const auto* y = reinterpret_cast<const CUpti_ActivitySynchronization2*>(rec);
        a.kind = kActSync;
        a.start_ns = ToMono(s, y->start);
        a.end_ns = ToMono(s, y->end);
        a.correlation_id = y->correlationId;
        a.stream = y->streamId;
        // Stream-wait-event only orders streams; the other kinds hold the host.
        if (y->type != CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT) a.flags |= kFlagBlockedHost;
        break;
      }
      case CUPTI_ACTIVITY_KIND_RUNTIME:
      case CUPTI_ACTIVITY_KIND_DRIVER: {
        const auto* p = reinterpret_cast<const CUpti_ActivityAPI*>(rec);
        a.kind = kActApi;
        a.start_ns = ToMono(s, p->start);
        a.end_ns = ToMono(s, p->end);
        a.correlation_id = p->correlationId;
        a.api_id = p->cbid;
        a.api_domain = rec->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? kApiDomainRuntime : kApiDomainDriver;
        break;
      }
      default:
        continue;
    }
    fn(a);
  }
}

}  // namespace

CuptiReader& Cupti() {
  static CuptiReader* r = new CuptiReader;
  return *r;
}

void CuptiReader::Start() {
  CuptiState& s = S();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.started) return;
    s.started = true;
  }
  auto give_up = [&](const std::string& why) {
    std::lock_guard<std::mutex> lock(s.mu);
    s.source = Source::kEvents;
    s.detail = why;
  };
  const char* mode = std::getenv("GPUWATCH_CUPTI");
  if (mode && std::strcmp(mode, "off") == 0) return give_up("CUPTI turned off (GPUWATCH_CUPTI=off)");
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.app_active) {
      s.source = Source::kEvents;
      s.detail = "CUPTI is in use by the application's profiler";
      return;
    }
  }
  void* lib = nullptr;
  const char* path = std::getenv("GPUWATCH_CUPTI_LIB");
  for (const char* name : {path, "libcupti.so.13", "libcupti.so.12", "libcupti.so"}) {
    if (name && *name && (lib = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
  }
  if (!lib) return give_up("libcupti not found (set GPUWATCH_CUPTI_LIB)");
  CuptiApi api{Sym<decltype(api.subscribe)>(lib, "cuptiSubscribe"),
          Sym<decltype(api.unsubscribe)>(lib, "cuptiUnsubscribe"),
          Sym<decltype(api.register_callbacks)>(lib, "cuptiActivityRegisterCallbacks"),
          Sym<decltype(api.enable)>(lib, "cuptiActivityEnable"),
          Sym<decltype(api.disable)>(lib, "cuptiActivityDisable"),
          Sym<decltype(api.flush_all)>(lib, "cuptiActivityFlushAll"),
          Sym<decltype(api.next_record)>(lib, "cuptiActivityGetNextRecord"),
          Sym<decltype(api.timestamp)>(lib, "cuptiGetTimestamp"),
          Sym<decltype(api.enable_hw_trace)>(lib, "cuptiActivityEnableHWTrace")};
  if (!api.subscribe || !api.unsubscribe || !api.register_callbacks || !api.enable || !api.disable || !api.flush_all ||
      !api.next_record || !api.timestamp) {
    return give_up("libcupti lacks the activity API");
  }
  // Another profiler (torch.profiler/Kineto, Nsight) holds the one callback subscriber:
  // step aside rather than fight it for the process-wide activity buffers. gpuwatch itself
  // does not keep the subscription, so a profiler started later can still take it.
  CUpti_SubscriberHandle probe = nullptr;
  const CUptiResult sub = api.subscribe(&probe, [](void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}, nullptr);
  if (sub == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) return give_up("CUPTI is held by another profiler");
  if (sub != CUPTI_SUCCESS) return give_up("CUPTI unusable (cuptiSubscribe error " + std::to_string(sub) + ")");
  api.unsubscribe(probe);
  if (api.register_callbacks(BufferRequested, BufferCompleted) != CUPTI_SUCCESS) {
    return give_up("cuptiActivityRegisterCallbacks failed");
  }
  for (CUpti_ActivityKind k : Kinds()) {
    if (api.enable(k) != CUPTI_SUCCESS) return give_up("cuptiActivityEnable failed for kind " + std::to_string(k));
  }
  // Hardware event tracing (Blackwell only; CUPTI_ERROR_NOT_SUPPORTED elsewhere) takes most
  // of CUPTI's cost off each launch: the overhead budget measures the rest.
  const bool hw = api.enable_hw_trace && api.enable_hw_trace(1) == CUPTI_SUCCESS;
  std::lock_guard<std::mutex> lock(s.mu);
  s.hw_trace = hw;
  s.api = api;
  s.started_ns = NowNs();
  Calibrate(s);
  s.source = Source::kCupti;
  s.detail = "CUPTI activity records";
}

void CuptiReader::AppCallbacks(void* request, void* complete) {
  std::lock_guard<std::mutex> lock(S().mu);
  S().app_request = reinterpret_cast<CUpti_BuffersCallbackRequestFunc>(request);
  S().app_complete = reinterpret_cast<CUpti_BuffersCallbackCompleteFunc>(complete);
}

void CuptiReader::HandOver(bool enabling) {
  CuptiState& s = S();
  std::lock_guard<std::mutex> control(s.control);
  Timer().SetCuptiTimes(false);  // our kernel records stop: collectives need their event pairs
  CuptiApi api;
  CUpti_BuffersCallbackRequestFunc app_request;
  CUpti_BuffersCallbackCompleteFunc app_complete;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (!s.started) {
      // Registering alone takes nothing yet (gpuwatch's Start replaces the callbacks and
      // HandOver gives them back); enabling a kind means the profiler is recording now.
      if (enabling) s.app_active = true;
      return;
    }
    if (s.source != Source::kCupti || s.handed_over) return;
    s.handed_over = true;
    api = s.api;
    s.detail = "CUPTI activity records until the application's profiler took CUPTI " +
               std::to_string((NowNs() - s.started_ns) / 1000000) + " ms after start; hooks and events after";
    app_request = s.app_request;
    app_complete = s.app_complete;
  }
  api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);  // our buffers come back to BufferCompleted
  for (CUpti_ActivityKind k : Kinds()) api.disable(k);
  // Registered before gpuwatch started (and replaced by gpuwatch's): theirs again.
  if (app_request && app_complete) api.register_callbacks(app_request, app_complete);
}

void CuptiReader::SetRecording(bool on) {
  CuptiState& s = S();
  std::lock_guard<std::mutex> control(s.control);
  CuptiApi api;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.source != Source::kCupti || s.handed_over || s.recording == on) return;
    s.recording = on;
    api = s.api;
  }
  for (CUpti_ActivityKind k : Kinds()) on ? api.enable(k) : api.disable(k);
}

bool CuptiReader::RecordsKernels() const {
  const auto& k = Kinds();
  if (std::find(k.begin(), k.end(), CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == k.end()) return false;
  std::lock_guard<std::mutex> lock(S().mu);
  return S().source == Source::kCupti && !S().handed_over && S().recording;
}

bool CuptiReader::hw_trace() const {
  std::lock_guard<std::mutex> lock(S().mu);
  return S().hw_trace;
}

bool CuptiReader::live() const {
  std::lock_guard<std::mutex> lock(S().mu);
  return S().source == Source::kCupti && !S().handed_over;
}

bool CuptiReader::gone() const {
  std::lock_guard<std::mutex> lock(S().mu);
  return S().source == Source::kEvents || S().handed_over;
}

CuptiReader::Source CuptiReader::source() const {
  std::lock_guard<std::mutex> lock(S().mu);
  return S().source;
}

std::string CuptiReader::source_detail() const {
  std::lock_guard<std::mutex> lock(S().mu);
  return S().detail;
}

void CuptiReader::Poll(bool flush, const std::function<void(const ActivityRecord&)>& fn) {
  CuptiState& s = S();
  if (source() != Source::kCupti) return;
  const uint64_t now = NowNs();
  if (!live()) flush = false;  // handed over: parse what came back, ask CUPTI for nothing
  if (live() && now - s.last_calibration_ns > 1'000'000'000ull) Calibrate(s);
  // Buffers come back when full or flushed; a flush every 100 ms bounds the latency.
  if (live() && (flush || now - s.last_flush_ns > 100'000'000ull)) {
    s.last_flush_ns = now;
    s.api.flush_all(flush ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);  // calls BufferCompleted: no lock held
  }
  for (;;) {
    std::pair<uint8_t*, size_t> buf;
    {
      std::lock_guard<std::mutex> lock(s.mu);
      if (s.completed.empty()) break;
      buf = s.completed.front();
      s.completed.pop_front();
    }
    Parse(s, buf.first, buf.second, fn);
    std::lock_guard<std::mutex> lock(s.mu);
    s.free_buffers.push_back(buf.first);
  }
}

}  // namespace gpuwatch::inject
