// See kineto_mapper.h.
#include "import/kineto_mapper.h"

#include "import/kineto_vocab.h"

namespace gpuwatch::collector {
namespace {

uint32_t U32(int64_t v) { return v < 0 ? 0 : static_cast<uint32_t>(v); }

}  // namespace

void KinetoMapper::NoteDevice(const TraceEvent& e, const DeviceSide& d) {
  if (e.correlation < 0) return;
  auto [it, added] = tables_.device.emplace(U32(e.correlation), d);
  if (!added && d.work && !it->second.work) it->second = d;  // work wins over a sync record
}

void KinetoMapper::NoteCollective(const TraceEvent& e) {
  if (e.correlation < 0) return;
  CollectiveSide c;
  // Recent Kineto copies record_param_comms' arguments onto the NCCL kernel; older traces
  // have only the kernel's name (op and dtype, no count or group).
  c.api = e.collective.empty() ? CollectiveOfKernel(e.name) : CollectiveOfName(e.collective);
  if (c.api == wire::API_UNSPECIFIED) return;
  const uint64_t nelems = c.api == wire::NCCL_REDUCE_SCATTER ? e.out_nelems : e.in_nelems;
  c.bytes = nelems * DtypeBytes(e.dtype);
  c.gpu_ns = e.dur_ns;
  c.comm = tables_.Comm(TraceComm{e.pg_name, e.pg_ranks, static_cast<int>(e.group_size)});
  tables_.collective[U32(e.correlation)] = c;
}

bool KinetoMapper::Map(const TraceEvent& e, std::string* error) {
  ++stats_.events;
  const KinetoKind kind = KindOf(e.ph, e.cat);
  if (kind == KinetoKind::kUnknown) {
    if (stats_.unknown_categories.size() < 16 || stats_.unknown_categories.count(e.cat))
      ++stats_.unknown_categories[e.cat];
    ++stats_.ignored;
    return true;
  }
  if (host_spans_ && (kind == KinetoKind::kCpuOp || kind == KinetoKind::kRuntime || kind == KinetoKind::kDriver) &&
      e.has_ts && e.has_dur && e.dur_ns > 0)
    host_spans_->push_back({e.ts_ns, e.ts_ns + e.dur_ns, static_cast<uint32_t>(e.tid)});
  const bool read_op = kind == KinetoKind::kCpuOp && (IsProfilerStep(e.name) || IsDataLoaderIteration(e.name));
  if (kind == KinetoKind::kIgnored || (kind == KinetoKind::kCpuOp && !read_op)) {
    ++stats_.ignored;
    return true;
  }
  if (!e.has_ts || !e.has_dur) {
    ++stats_.untimed;
    return true;
  }
  ImportRecord r;
  r.t_ns = e.ts_ns;
  r.dur_ns = e.dur_ns;
  r.order = order_++;
  r.correlation = U32(e.correlation);
  r.tid = static_cast<uint32_t>(e.tid);
  r.device = static_cast<int32_t>(e.device < 0 ? 0 : e.device);
  r.stream = U32(e.stream);
  switch (kind) {
    case KinetoKind::kRuntime:
    case KinetoKind::kDriver:
      r.kind = RecordKind::kCall;
      r.api = ApiOfCall(e.name);
      r.cbid = U32(e.cbid);
      r.driver = kind == KinetoKind::kDriver;
      break;
    case KinetoKind::kKernel: {
      r.kind = RecordKind::kKernel;
      r.name_id = tables_.Name(e.name);
      for (int i = 0; i < 3; ++i) {
        r.grid[i] = e.grid[i];
        r.block[i] = e.block[i];
      }
      r.registers = e.registers;
      r.shared_bytes = e.shared_bytes;
      DeviceSide d;
      d.stream = r.stream;
      d.name_id = r.name_id;
      d.work = true;
      NoteDevice(e, d);
      if (IsNcclKernel(e.name)) NoteCollective(e);
      ++stats_.kernels;
      break;
    }
    case KinetoKind::kMemcpy: {
      r.kind = RecordKind::kMemcpy;
      r.copy_kind = static_cast<uint8_t>(CopyKindOfName(e.name, &r.pageable));
      r.bytes = e.bytes;
      DeviceSide d;
      d.stream = r.stream;
      d.bytes = e.bytes;
      d.copy_kind = r.copy_kind;
      d.pageable = r.pageable;
      d.work = true;
      NoteDevice(e, d);
      ++stats_.memcpys;
      stats_.memcpy_bytes += e.bytes;
      break;
    }
    case KinetoKind::kMemset: {
      r.kind = RecordKind::kMemset;
      r.bytes = e.bytes;
      DeviceSide d;
      d.stream = r.stream;
      d.bytes = e.bytes;
      d.work = true;
      NoteDevice(e, d);
      ++stats_.memsets;
      stats_.memset_bytes += e.bytes;
      break;
    }
    case KinetoKind::kSync: {
      r.kind = RecordKind::kSync;
      const std::string& what = e.sync_kind.empty() ? e.name : e.sync_kind;
      // A stream waiting on an event orders streams; the other kinds hold the host.
      r.blocks_host = what != "Stream Wait Event";
      DeviceSide d;
      d.stream = r.stream;
      // The event a stream waited on, or the host synchronized with (cudaEventSynchronize,
      // and a cudaEventQuery's "Event Sync"): the cudaEventRecord that recorded it, and where.
      const bool on_event = !r.blocks_host || what == "Event Sync";
      if (on_event && e.wait_record_correlation > 0 && e.wait_on_stream >= 0) {
        d.waits_for = U32(e.wait_record_correlation);
        tables_.recorded_on[d.waits_for] = U32(e.wait_on_stream);
      }
      NoteDevice(e, d);
      ++stats_.syncs;
      break;
    }
    case KinetoKind::kPython:
      r.kind = RecordKind::kFrame;
      r.name_id = tables_.Name(HostFrameOf(kind, e.name));
      break;
    case KinetoKind::kCpuOp:
      if (IsDataLoaderIteration(e.name)) {
        r.kind = RecordKind::kFrame;
        r.name_id = tables_.Name(HostFrameOf(kind, e.name));
        break;
      }
      [[fallthrough]];
    case KinetoKind::kAnnotation:
      r.kind = RecordKind::kRange;
      // Every ProfilerStep#N is one range name, so the step finder takes them as one series.
      if (IsProfilerStep(e.name)) {
        r.name_id = tables_.Name(kProfilerStepRange);
        ++stats_.steps;
      } else {
        r.name_id = tables_.Name(e.name);
      }
      ++stats_.ranges;
      break;
    default: return true;
  }
  return sorter_.Add(r, error);
}

}  // namespace gpuwatch::collector
