// NVTX v3 ranges (training steps): gpuwatch is NVTX's injected tool, and each closed range
// becomes one Record (kApiNvtxRange: t_ticks = push, dur_ticks = length, name_id, seq = depth).
#include <dlfcn.h>
// We define InitializeInjectionNvtx2_fnptr ourselves (below), not NVTX's weak one.
#define NVTX_STATIC_INJECTION_IMPL
#include <cstdint>
extern "C" int (*InitializeInjectionNvtx2_fnptr)(const void* (*)(uint32_t));
#include <nvtx3/nvToolsExt.h>

#include <cstdlib>
#include <cstring>

#include "record/recorder.h"
#include "record/registry.h"
#include "record/stamp_clock.h"

namespace gi = gpuwatch::inject;

namespace {

// Hot path: a push stores (Stamp(), name id) on a fixed per-thread stack; a pop emits the
// Record. Names are interned once per distinct (pointer, hash) through the kernel-name
// registry (the sender ships them as KernelName entries); a per-thread direct-mapped cache
// keeps the mutex off the hot path. Mark and the wide-char/Ex variants are not recorded.
constexpr int kMaxDepth = 64;  // deeper pushes are counted for depth but not recorded
constexpr int kCacheSize = 64;
constexpr size_t kMaxName = 256;

struct Open {
  uint64_t t_ticks;
  uint32_t name_id;
};
thread_local Open tl_stack[kMaxDepth];
thread_local int tl_depth = 0;

struct CacheEntry {
  const char* ptr;
  uint64_t hash;
  uint32_t id;
};
thread_local CacheEntry tl_cache[kCacheSize];

uint32_t NameId(const char* msg) {
  if (!msg) return 0;
  const size_t n = strnlen(msg, kMaxName);
  const uint64_t h = gi::HashBytes(msg, n);
  CacheEntry& c = tl_cache[(h ^ reinterpret_cast<uintptr_t>(msg)) % kCacheSize];
  if (c.ptr == msg && c.hash == h && c.id) return c.id;
  char buf[kMaxName + 1];
  std::memcpy(buf, msg, n);
  buf[n] = '\0';
  const uint32_t id = gi::Kernels().Intern(buf);  // mutex: once per distinct name per thread
  c = CacheEntry{msg, h, id};
  return id;
}

// Push and pop answer what NVTX answers with no tool attached (NVTX_NO_PUSH_POP_TRACKING),
// so the job sees the same values with and without gpuwatch.
int Push(const char* msg) {
  const int d = tl_depth++;
  if (!gi::RecordingStarted() || d < 0 || d >= kMaxDepth) return NVTX_NO_PUSH_POP_TRACKING;
  tl_stack[d] = Open{gi::Stamp(), NameId(msg)};
  return NVTX_NO_PUSH_POP_TRACKING;
}

int Pop() {
  if (tl_depth <= 0) return NVTX_NO_PUSH_POP_TRACKING;  // unbalanced: nothing to close
  const int d = --tl_depth;
  if (!gi::RecordingStarted() || d >= kMaxDepth) {
    if (d < kMaxDepth) tl_stack[d].t_ticks = 0;
    return NVTX_NO_PUSH_POP_TRACKING;
  }
  const Open& o = tl_stack[d];
  if (o.t_ticks == 0) return NVTX_NO_PUSH_POP_TRACKING;
  gi::Record r{};
  r.api = gi::kApiNvtxRange;
  r.t_ticks = o.t_ticks;
  r.dur_ticks = gi::Stamp() - o.t_ticks;
  r.name_id = o.name_id;
  r.seq = static_cast<uint64_t>(d);
  tl_stack[d].t_ticks = 0;
  gi::Emit(r);
  return NVTX_NO_PUSH_POP_TRACKING;
}

int NVTX_API RangePushA(const char* msg) { return Push(msg); }
int NVTX_API RangePushEx(const nvtxEventAttributes_t* a) {
  const bool ascii = a && a->messageType == NVTX_MESSAGE_TYPE_ASCII;
  return Push(ascii ? a->message.ascii : "nvtx");
}
int NVTX_API RangePop() { return Pop(); }

// Start/End ranges may end on another thread: a small table keyed by the returned id.
constexpr int kMaxStarted = 256;
struct Started {
  std::atomic<uint64_t> t_ticks{0};
  std::atomic<uint32_t> name_id{0};
};
Started g_started[kMaxStarted];
std::atomic<uint64_t> g_next_id{1};

nvtxRangeId_t StartRange(const char* msg) {
  const uint64_t id = g_next_id.fetch_add(1, std::memory_order_relaxed);
  if (!gi::RecordingStarted()) return id;
  Started& s = g_started[id % kMaxStarted];
  s.name_id.store(NameId(msg), std::memory_order_relaxed);
  s.t_ticks.store(gi::Stamp(), std::memory_order_release);
  return id;
}
nvtxRangeId_t NVTX_API RangeStartA(const char* msg) { return StartRange(msg); }
nvtxRangeId_t NVTX_API RangeStartEx(const nvtxEventAttributes_t* a) {
  const bool ascii = a && a->messageType == NVTX_MESSAGE_TYPE_ASCII;
  return StartRange(ascii ? a->message.ascii : "nvtx");
}
void NVTX_API RangeEnd(nvtxRangeId_t id) {
  if (!gi::RecordingStarted()) return;
  Started& s = g_started[id % kMaxStarted];
  const uint64_t t0 = s.t_ticks.exchange(0, std::memory_order_acquire);
  if (t0 == 0) return;
  gi::Record r{};
  r.api = gi::kApiNvtxRange;
  r.t_ticks = t0;
  r.dur_ticks = gi::Stamp() - t0;
  r.name_id = s.name_id.load(std::memory_order_relaxed);
  gi::Emit(r);
}

void Set(NvtxFunctionTable table, unsigned size, unsigned id, NvtxFunctionPointer fn) {
  if (id < size && table[id]) *table[id] = fn;
}

int NVTX_API Initialize(NvtxGetExportTableFunc_t get) {
  if (!get) return 0;
  const auto* cb = static_cast<const NvtxExportTableCallbacks*>(get(NVTX_ETID_CALLBACKS));
  if (!cb || !cb->GetModuleFunctionTable) return 0;
  NvtxFunctionTable t = nullptr;
  unsigned size = 0;
  if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &size) || !t) return 0;
  Set(t, size, NVTX_CBID_CORE_RangePushA, reinterpret_cast<NvtxFunctionPointer>(&RangePushA));
  Set(t, size, NVTX_CBID_CORE_RangePushEx, reinterpret_cast<NvtxFunctionPointer>(&RangePushEx));
  Set(t, size, NVTX_CBID_CORE_RangePop, reinterpret_cast<NvtxFunctionPointer>(&RangePop));
  Set(t, size, NVTX_CBID_CORE_RangeStartA, reinterpret_cast<NvtxFunctionPointer>(&RangeStartA));
  Set(t, size, NVTX_CBID_CORE_RangeStartEx, reinterpret_cast<NvtxFunctionPointer>(&RangeStartEx));
  Set(t, size, NVTX_CBID_CORE_RangeEnd, reinterpret_cast<NvtxFunctionPointer>(&RangeEnd));
  return 1;
}

// NVTX is header-only: the application's own copy looks for a tool on its first NVTX call,
// in the environment variable NVTX_INJECTION64_PATH (a library it dlopen()s to call
// `InitializeInjectionNvtx2`) or, for a tool linked into the program, the C symbol
// `InitializeInjectionNvtx2_fnptr`. A preloaded library cannot override a weak definition
// inside the executable, so at load time we point NVTX_INJECTION64_PATH at ourselves
// (unless the user set it: another tool, e.g. Nsight, wins). dlopen() of an already loaded
// library returns it, so NVTX then calls InitializeInjectionNvtx2 below, which fills NVTX's
// core callback table.
__attribute__((constructor)) void PointNvtxHere() {
  if (std::getenv("NVTX_INJECTION64_PATH")) return;
  if (const char* off = std::getenv("GPUWATCH_NVTX"); off && std::strcmp(off, "0") == 0) return;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&PointNvtxHere), &info) && info.dli_fname && info.dli_fname[0] == '/')
    setenv("NVTX_INJECTION64_PATH", info.dli_fname, 0);
}

}  // namespace

extern "C" {
// Dynamic injection entry point (NVTX_INJECTION64_PATH).
__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get) {
  return Initialize(get);
}
// Static injection: found by NVTX copies whose weak reference resolves to us (shared
// libraries built with NVTX); a definition inside the executable itself takes precedence.
__attribute__((visibility("default"))) NvtxInitializeInjectionNvtxFunc_t InitializeInjectionNvtx2_fnptr =
    &InitializeInjectionNvtx2;
}
