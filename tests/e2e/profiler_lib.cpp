// The profiler's half of profiler_app.cpp, in a library of its own that needs libcupti, as
// PyTorch's libtorch_cpu.so does (Kineto lives there). The program opens it with RTLD_LOCAL,
// as Python opens extension modules, so CUPTI is not in the global scope while this
// library's calls to CUPTI still go through it, where gpuwatch's wrappers come first.
#include <cupti.h>

#include <cstdlib>
#include <mutex>
#include <set>

namespace {
std::mutex mu;
std::set<uint8_t*> ours;
long unknown_buffers = 0, copies_seen = 0;

void CUPTIAPI Request(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 1 << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
  std::lock_guard<std::mutex> lock(mu);
  ours.insert(*buffer);
}

void CUPTIAPI Complete(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard<std::mutex> lock(mu);
  if (!ours.count(buffer)) {
    ++unknown_buffers;  // not ours: never free or read it
    return;
  }
  CUpti_Activity* r = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS)
    if (r->kind == CUPTI_ACTIVITY_KIND_MEMCPY) ++copies_seen;
}
}  // namespace

extern "C" {
int profiler_register() { return cuptiActivityRegisterCallbacks(Request, Complete) == CUPTI_SUCCESS ? 0 : 1; }
int profiler_enable() { return cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY) == CUPTI_SUCCESS ? 0 : 1; }
void profiler_finish(long* unknown, long* seen) {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> lock(mu);
  *unknown = unknown_buffers;
  *seen = copies_seen;
}
}
