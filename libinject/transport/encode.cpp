#include "transport/encode.h"

#include <cstdlib>

#include "enrich/cupti_reader.h"
#include "enrich/environment_probe.h"
#include "enrich/proc_sampler.h"
#include "wire_encode.h"

namespace gpuwatch::inject {

using namespace gpuwatch::wire::enc;

namespace {

// proto3 `string` fields must be valid UTF-8 or the collector rejects the whole frame; job
// ids, host names and paths come from the environment and may not be. Invalid bytes
// become '?'.
std::string Utf8(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size();) {
    const auto c = static_cast<unsigned char>(in[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = n > 0 && i + n <= in.size();
    for (size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(in[i + k]) & 0xC0) == 0x80;
    if (ok && n > 1) {  // reject overlong forms, surrogates and values past U+10FFFF
      const auto c1 = static_cast<unsigned char>(in[i + 1]);
      ok = !(n == 2 && c < 0xC2) && !(n == 3 && c == 0xE0 && c1 < 0xA0) && !(n == 3 && c == 0xED && c1 >= 0xA0) &&
           !(n == 4 && c == 0xF0 && c1 < 0x90) && !(n == 4 && (c > 0xF4 || (c == 0xF4 && c1 >= 0x90)));
    }
    if (ok) {
      out.append(in.substr(i, n));
      i += n;
    } else {
      out.push_back('?');
      ++i;
    }
  }
  return out;
}

void Text(std::string& o, uint32_t field, std::string_view s) { Bytes(o, field, Utf8(s)); }

}  // namespace

std::string EncodeHello(const HelloInfo& h) {
  constexpr uint32_t kProtocolVersion = 1;  // gpuwatch.wire.PROTOCOL_VERSION
  std::string o;
  UInt(o, 1, kProtocolVersion);
  Text(o, 2, h.id->job_id);
  Int(o, 3, h.id->rank);
  Int(o, 4, h.id->local_rank);
  Int(o, 5, h.id->world_size);
  Text(o, 6, h.id->rank_source);
  Text(o, 7, h.id->host);
  Int(o, 8, h.id->pid);
  Int(o, 9, h.device);
  Text(o, 10, h.out_dir);
  Text(o, 11, h.library_version);
  UInt(o, 12, h.start_ns);
  // Hello.step_range (13): which NVTX range is a training step (issue 6).
  if (const char* sr = std::getenv("GPUWATCH_STEP_RANGE"); sr && *sr) Text(o, 13, std::string_view(sr).substr(0, 128));
  // Hello.token (14): the job token a TCP peer must present (issue 7).
  Text(o, 14, h.token);
  return o;
}

void AppendBatchSeq(std::string& batch, uint64_t seq) { UInt(batch, 8, seq); }
void AppendBatchSettled(std::string& batch, uint64_t settled_ns) { UInt(batch, 12, settled_ns); }

void AppendEvent(std::string& batch, const Record& r, uint32_t tid, uint64_t gpu_ns) {
  // Encoded into a small local buffer first: its length prefixes it in the batch.
  std::string e;
  e.reserve(80);
  UInt(e, 1, r.api);
  UInt(e, 2, r.t_ns);
  UInt(e, 3, r.dur_ns);
  UInt(e, 4, r.bytes);
  UInt(e, 5, r.copy_kind);
  UInt(e, 6, r.flags);
  UInt(e, 7, r.stream);
  UInt(e, 8, tid);
  // name_id is a kernel or range name, except on syncs and copies: there, a call site.
  const bool site = r.api == kApiMemcpy || r.api == kApiMemcpyAsync || r.api == kApiStreamSynchronize ||
                    r.api == kApiDeviceSynchronize || r.api == kApiEventSynchronize;
  UInt(e, site ? 14 : 9, r.name_id);
  if (r.comm_id) {
    UInt(e, 10, r.comm_id);
    UInt(e, 11, r.seq);
    Int(e, 12, r.peer);
  }
  UInt(e, 13, gpu_ns);
  Message(batch, 1, e);
}

void AppendCallSite(std::string& batch, uint32_t id, const std::vector<std::string>& frames,
                    std::string_view python) {
  std::string c;
  UInt(c, 1, id);
  for (const std::string& f : frames) Text(c, 2, f);
  Text(c, 3, python);
  Message(batch, 11, c);
}

void AppendKernelName(std::string& batch, uint32_t id, std::string_view name) {
  std::string k;
  UInt(k, 1, id);
  Text(k, 2, name);
  Message(batch, 2, k);
}

void AppendCommunicator(std::string& batch, uint64_t comm_id, int nranks, int rank, uint64_t unique_hash) {
  std::string c;
  UInt(c, 1, comm_id);
  Int(c, 2, nranks);
  Int(c, 3, rank);
  UInt(c, 4, unique_hash);
  Message(batch, 3, c);
}

void AppendDropCount(std::string& msg, uint32_t field, std::string_view reason, uint64_t count) {
  std::string d;
  Text(d, 1, reason);
  UInt(d, 2, count);
  Message(msg, field, d);
}

void AppendActivity(std::string& batch, const ActivityRecord& a) {
  std::string m;
  m.reserve(64);
  UInt(m, 1, a.kind);
  UInt(m, 2, a.start_ns);
  UInt(m, 3, a.end_ns);
  UInt(m, 4, a.correlation_id);
  UInt(m, 5, a.stream);
  Int(m, 6, a.device);
  UInt(m, 7, a.name_id);
  UInt(m, 8, a.bytes);
  UInt(m, 9, a.copy_kind);
  UInt(m, 10, a.flags);
  UInt(m, 11, a.api_id);
  UInt(m, 12, a.api_domain);
  Message(batch, 5, m);
}

void AppendGpuSource(std::string& batch, int source, std::string_view detail) {
  UInt(batch, 6, static_cast<uint64_t>(source));
  Text(batch, 7, detail);
}

void AppendHeartbeatNow(std::string& hb, uint64_t now_ns) { UInt(hb, 1, now_ns); }

void AppendInFlight(std::string& hb, uint8_t api, uint64_t since_ns, uint32_t tid, uint64_t comm_id, uint64_t seq,
                    uint64_t stream) {
  std::string m;
  UInt(m, 1, api);
  UInt(m, 2, since_ns);
  UInt(m, 3, tid);
  UInt(m, 4, comm_id);
  UInt(m, 5, seq);
  UInt(m, 6, stream);
  Message(hb, 2, m);
}

void AppendCommProgress(std::string& hb, uint64_t comm_id, uint64_t unique_hash, uint64_t last_seq, bool any) {
  std::string m;
  UInt(m, 1, comm_id);
  UInt(m, 2, unique_hash);
  UInt(m, 3, last_seq);
  UInt(m, 4, any ? 1 : 0);
  Message(hb, 3, m);
}

void AppendGoodbyeTail(std::string& goodbye, uint64_t events_sent, uint64_t end_ns) {
  UInt(goodbye, 2, events_sent);
  UInt(goodbye, 3, end_ns);
}

void AppendEnvironment(std::string& batch, const EnvironmentInfo& e) {
  std::string m;
  Int(m, 1, e.cuda_runtime);
  Int(m, 2, e.cuda_driver);
  Int(m, 3, e.nccl);
  for (const auto& [name, value] : e.settings) {
    std::string v;
    Text(v, 1, name);
    Text(v, 2, value);
    Message(m, 4, v);
  }
  Message(batch, 9, m);
}

void AppendProcSample(std::string& batch, const ProcTotals& s) {
  std::string m;
  UInt(m, 1, s.t_ns);
  UInt(m, 2, s.cpu_ns);
  UInt(m, 3, s.read_chars);
  UInt(m, 4, s.read_bytes);
  UInt(m, 5, s.processes);
  UInt(m, 6, s.run_wait_ns);
  Message(batch, 10, m);
}

}  // namespace gpuwatch::inject
