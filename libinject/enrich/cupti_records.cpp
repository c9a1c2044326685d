// See cupti_records.h.
#include "enrich/cupti_records.h"

#include <cstring>

#include "record/record.h"
#include "record/registry.h"

namespace gpuwatch::inject {
namespace {

uint8_t CopyKindOf(uint8_t cupti_kind) {
  switch (cupti_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return kCopyH2D;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return kCopyD2H;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return kCopyD2D;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return kCopyH2H;
    default: return 0;
  }
}

uint64_t ToMono(int64_t offset_ns, uint64_t cupti_ns) {
  return static_cast<uint64_t>(static_cast<int64_t>(cupti_ns) - offset_ns);
}

// The fields every device record (kernel, memcpy, memset) has under the same names. False:
// the record has no times (CUPTI's 0 and 0: unfinished when flushed).
template <typename R>
bool DeviceFields(int64_t offset_ns, const R* r, ActivityRecord& a) {
  if (r->end < r->start || r->start == 0) return false;
  a.start_ns = ToMono(offset_ns, r->start);
  a.end_ns = ToMono(offset_ns, r->end);
  a.correlation_id = r->correlationId;
  a.stream = r->streamId;
  a.device = static_cast<int32_t>(r->deviceId);
  a.graph_id = r->graphId;
  a.graph_node_id = r->graphNodeId;
  return true;
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

}  // namespace

void ParseActivityBuffer(NextRecordFn next_record, int64_t offset_ns, uint8_t* buffer, size_t valid,
                         const std::function<void(const ActivityRecord&)>& fn, uint64_t& incomplete) {
  CUpti_Activity* rec = nullptr;
  while (next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
    ActivityRecord a{};
    bool timed = true;  // device records: false when CUPTI had no times for them
    switch (rec->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
        a.kind = kActKernel;
        timed = DeviceFields(offset_ns, k, a);
        a.name_id = Kernels().Intern(k->name);
        a.comm_kernel = k->name && std::strstr(k->name, "nccl") != nullptr;
        KernelGeometry(k, a);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
        a.kind = kActMemcpy;
        timed = DeviceFields(offset_ns, m, a);
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
        timed = DeviceFields(offset_ns, m, a);
        a.bytes = m->bytes;
        break;
      }
      case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
        const auto* y = reinterpret_cast<const CUpti_ActivitySynchronization2*>(rec);
        a.kind = kActSync;
        a.start_ns = ToMono(offset_ns, y->start);
        a.end_ns = ToMono(offset_ns, y->end);
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
        a.start_ns = ToMono(offset_ns, p->start);
        a.end_ns = ToMono(offset_ns, p->end);
        a.correlation_id = p->correlationId;
        a.api_id = p->cbid;
        a.api_domain = rec->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? kApiDomainRuntime : kApiDomainDriver;
        break;
      }
      default:
        continue;
    }
    if (!timed) {
      ++incomplete;
      continue;
    }
    fn(a);
  }
}

}  // namespace gpuwatch::inject
