// Public API of the simulated libnccl.so.2.
//
// Exported like real NCCL: a strong pnccl* definition and a weak nccl* alias for each
// function (the MPI "PMPI" pattern), so a preloaded profiler can define ncclAllReduce and
// forward to pncclAllReduce. Device work goes through the simgpu_* API, never through the
// public cuda* functions: real NCCL uses its own static runtime, invisible to cudart hooks.
#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

#include "comm.h"

#define NCCL_EXPORT extern "C" __attribute__((visibility("default")))
#define NCCL_ALIAS(ret, name, params) \
  NCCL_EXPORT ret name params __attribute__((weak, alias("p" #name)));

using simnccl::OpPlan;

namespace {


thread_local int tl_group_depth = 0;
thread_local std::vector<std::pair<cudaStream_t, OpPlan>> tl_group;  // ops of the open group
thread_local std::string tl_last_error;

ncclResult_t error(ncclComm* comm, ncclResult_t r, const std::string& msg) {
  tl_last_error = msg;
  if (comm) comm->last_error = msg;
  return r;
}

size_t element_size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
  }
}

uint64_t bus_ns(double bytes) {
  double gbps = simgpu_config_value("busbw_gbps");
  return gbps > 0 ? static_cast<uint64_t>(bytes / gbps + 0.5) : 0;  // 1 GB/s = 1 byte/ns
}

uint64_t latency_ns() { return static_cast<uint64_t>(simgpu_config_value("coll_latency_us") * 1000.0 + 0.5); }

// The device kernel real NCCL (2.19+) would run, e.g. ncclDevKernel_AllReduce_Sum_f32_RING_LL:
// what CUPTI names the collective's kernel record. Interned for the process lifetime (the
// activity records point at it). `redop` < 0: the collective has no reduction.
const char* kernel_name(const char* api_name, int redop, ncclDataType_t dt) {
  static const char* const types[] = {"i8", "u8", "i32", "u32", "i64", "u64", "f16", "f32", "f64", "bf16", "f8e4m3", "f8e5m2"};
  std::string k = std::string("ncclDevKernel_") + (api_name + 4);  // drop "nccl"
  if (redop >= 0) {
    const char* op = redop == ncclSum ? "Sum" : redop == ncclProd ? "Prod" : (redop == ncclMax || redop == ncclMin) ? "MinMax" : "PreMulSum";
    const int t = static_cast<int>(dt);
    k += std::string("_") + op + "_" + (t >= 0 && t < 12 ? types[t] : "f32");
  }
  k += "_RING_LL";
  static std::mutex mu;
  static auto* names = new std::set<std::string>;
  std::lock_guard<std::mutex> lk(mu);
  return names->insert(k).first->c_str();
}

// Interned for the process lifetime, as kernel names are: activity records point at it.
const char* intern(const std::string& s) {
  static std::mutex mu;
  static auto* strings = new std::set<std::string>;
  std::lock_guard<std::mutex> lk(mu);
  return strings->insert(s).first->c_str();
}

void set_members(ncclComm* c, std::vector<int> members) {
  std::string label;
  for (size_t i = 0; i < members.size(); ++i) label += (i ? "," : "") + std::to_string(members[i]);
  c->members = std::move(members);
  c->label = intern(label);
}

// Queues the plan, directly or into the open group. On a stream being captured into a CUDA
// graph it is accepted and dropped: real NCCL records it into the graph, which runs it at
// each launch; the simulator's graphs hold no collectives (docs/simulator.md, known gaps).
ncclResult_t enqueue(cudaStream_t stream, const OpPlan& p) {
  if (simgpu_stream_capturing(stream)) return ncclSuccess;
  if (tl_group_depth > 0) {
    tl_group.emplace_back(stream, p);
    return ncclSuccess;
  }
  if (simnccl::submit(stream, {p}) != cudaSuccess)
    return error(p.comm, ncclInvalidArgument, "invalid CUDA stream");
  return ncclSuccess;
}

// A collective with nccl-tests' size S and bus factor.
ncclResult_t collective(ncclComm* comm, int kind, const char* name, size_t count, ncclDataType_t dt,
                        double s_elems_factor, double bus_factor, cudaStream_t stream, int redop = -1) {
  if (!comm) return error(nullptr, ncclInvalidArgument, std::string(name) + ": comm is NULL");
  size_t es = element_size(dt);
  if (!es) return error(comm, ncclInvalidArgument, std::string(name) + ": bad datatype");
  OpPlan p;
  p.comm = comm;
  double s = static_cast<double>(count) * static_cast<double>(es) * s_elems_factor;
  p.desc = simgpu_external_desc{kind, static_cast<uint64_t>(s), kernel_name(name, redop, dt), comm->label, 0, 0};
  p.participant = comm->rank;
  p.seq = comm->coll_seq++;
  p.duration_ns = latency_ns() + bus_ns(s * bus_factor);
  // A ring sends and receives its bus bytes on every rank (nccl-tests' busbw is their rate).
  p.desc.link_tx_bytes = p.desc.link_rx_bytes = static_cast<uint64_t>(s * bus_factor + 0.5);
  return enqueue(stream, p);
}

ncclResult_t p2p(ncclComm* comm, bool send, size_t count, ncclDataType_t dt, int peer, cudaStream_t stream) {
  const char* name = send ? "ncclSend" : "ncclRecv";
  if (!comm) return error(nullptr, ncclInvalidArgument, std::string(name) + ": comm is NULL");
  size_t es = element_size(dt);
  if (!es) return error(comm, ncclInvalidArgument, std::string(name) + ": bad datatype");
  if (peer < 0 || peer >= comm->nranks)
    return error(comm, ncclInvalidArgument, std::string(name) + ": peer out of range");
  OpPlan p;
  p.comm = comm;
  uint64_t s = static_cast<uint64_t>(count) * es;
  p.desc = simgpu_external_desc{send ? SIMGPU_SEND : SIMGPU_RECV, s, "ncclDevKernel_SendRecv", comm->label, 0, 0};
  p.src = send ? comm->rank : peer;
  p.dst = send ? peer : comm->rank;
  p.participant = send ? 0 : 1;
  p.seq = send ? comm->send_seq[peer]++ : comm->recv_seq[peer]++;
  p.duration_ns = latency_ns() + bus_ns(static_cast<double>(s));
  (send ? p.desc.link_tx_bytes : p.desc.link_rx_bytes) = s;
  return enqueue(stream, p);
}

ncclResult_t init(ncclComm_t* out, int nranks, const std::string& name, int rank) {
  if (!out) return error(nullptr, ncclInvalidArgument, "ncclCommInitRank: comm is NULL");
  if (nranks < 1 || nranks > simnccl::kMaxRanks || rank < 0 || rank >= nranks)
    return error(nullptr, ncclInvalidArgument, "ncclCommInitRank: bad nranks or rank");
  if (name.empty() || name[0] != '/') return error(nullptr, ncclInvalidArgument, "ncclCommInitRank: bad unique id");
  auto* c = new ncclComm;
  c->nranks = nranks;
  c->rank = rank;
  c->device = simgpu_current_device();
  std::string err;
  if (!simnccl::join(c, name, err)) {
    delete c;
    return error(nullptr, ncclSystemError, err);
  }
  std::vector<int> members(nranks);
  for (int r = 0; r < nranks; ++r) members[r] = r;
  set_members(c, std::move(members));
  *out = c;
  return ncclSuccess;
}

}  // namespace

// ---- version, ids, communicators -----------------------------------------------------

NCCL_EXPORT ncclResult_t pncclGetVersion(int* version) {
  if (!version) return ncclInvalidArgument;
  // NCCL 2.28.0 unless SIMGPU_CONFIG's nccl_version says otherwise.
  *version = static_cast<int>(simgpu_config_value("nccl_version"));
  return ncclSuccess;
}

NCCL_EXPORT ncclResult_t pncclGetUniqueId(ncclUniqueId* id) {
  if (!id) return ncclInvalidArgument;
  std::memset(id->internal, 0, sizeof id->internal);
  std::random_device rd;
  unsigned long long r = (static_cast<unsigned long long>(rd()) << 32) ^ rd();
  // The id carries the name of the shared-memory segment the ranks meet in.
  std::snprintf(id->internal, sizeof id->internal, "/gpuwatch-simnccl-%d-%016llx", static_cast<int>(getpid()), r);
  return ncclSuccess;
}

NCCL_EXPORT ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  return init(comm, nranks, std::string(id.internal, strnlen(id.internal, sizeof id.internal)), rank);
}

NCCL_EXPORT ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                                 ncclConfig_t* config) {
  (void)config;  // blocking or not, init completes before returning here
  return pncclCommInitRank(comm, nranks, id, rank);
}

NCCL_EXPORT ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                        ncclConfig_t* config) {
  (void)config;
  if (!comm || !newcomm) return error(comm, ncclInvalidArgument, "ncclCommSplit: NULL argument");
  uint64_t split = comm->split_seq;
  uint64_t mine = (static_cast<uint64_t>(static_cast<uint32_t>(color)) << 32) | static_cast<uint32_t>(key);
  std::vector<uint64_t> all;
  std::string err;
  if (!simnccl::exchange(comm, mine, all, err)) return error(comm, ncclSystemError, err);
  *newcomm = nullptr;
  if (color == NCCL_SPLIT_NOCOLOR) return ncclSuccess;
  // New ranks: members of my color ordered by (key, old rank), as NCCL does.
  std::vector<std::pair<int, int>> members;  // (key, old rank)
  for (int r = 0; r < comm->nranks; ++r)
    if (static_cast<int>(all[r] >> 32) == color) members.emplace_back(static_cast<int>(all[r] & 0xffffffffu), r);
  std::sort(members.begin(), members.end());
  int newrank = static_cast<int>(std::find(members.begin(), members.end(), std::make_pair(key, comm->rank)) - members.begin());
  std::string name = comm->seg.name() + "." + std::to_string(split) + "." + std::to_string(color);
  ncclResult_t r = init(newcomm, static_cast<int>(members.size()), name, newrank);
  if (r != ncclSuccess) return r;
  std::vector<int> root;  // the new members as ranks of the root communicator
  for (const auto& m : members) root.push_back(comm->members[m.second]);
  set_members(*newcomm, std::move(root));
  return ncclSuccess;
}

NCCL_EXPORT ncclResult_t pncclCommDestroy(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  simnccl::drain(comm, false);  // real NCCL also waits for the comm's outstanding work
  simnccl::leave(comm);
  delete comm;
  return ncclSuccess;
}

NCCL_EXPORT ncclResult_t pncclCommAbort(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  simnccl::drain(comm, true);
  simnccl::leave(comm);
  delete comm;
  return ncclSuccess;
}

NCCL_EXPORT ncclResult_t pncclCommFinalize(ncclComm_t comm) {
  if (comm) simnccl::drain(comm, false);
  return ncclSuccess;
}

NCCL_EXPORT ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  if (!comm || !asyncError) return ncclInvalidArgument;
  *asyncError = ncclSuccess;
  return ncclSuccess;
}

NCCL_EXPORT ncclResult_t pncclCommCount(const ncclComm_t comm, int* count) {
  if (!comm || !count) return ncclInvalidArgument;
  *count = comm->nranks;
  return ncclSuccess;
}

NCCL_EXPORT ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (!comm || !rank) return ncclInvalidArgument;
  *rank = comm->rank;
  return ncclSuccess;
}

NCCL_EXPORT ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device) {
  if (!comm || !device) return ncclInvalidArgument;
  *device = comm->device;
  return ncclSuccess;
}

// ---- collectives and point-to-point (S and bus factors as in nccl-tests) -------------

NCCL_EXPORT ncclResult_t pncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                        ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  (void)sendbuff, (void)recvbuff;
  double n = comm ? comm->nranks : 1;
  return collective(comm, SIMGPU_ALLREDUCE, "ncclAllReduce", count, datatype, 1.0, 2.0 * (n - 1) / n, stream, op);
}

NCCL_EXPORT ncclResult_t pncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                        ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  (void)sendbuff, (void)recvbuff;
  double n = comm ? comm->nranks : 1;
  return collective(comm, SIMGPU_ALLGATHER, "ncclAllGather", sendcount, datatype, n, (n - 1) / n, stream);
}

NCCL_EXPORT ncclResult_t pncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                            ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                            cudaStream_t stream) {
  (void)sendbuff, (void)recvbuff;
  double n = comm ? comm->nranks : 1;
  return collective(comm, SIMGPU_REDUCESCATTER, "ncclReduceScatter", recvcount, datatype, n, (n - 1) / n, stream, op);
}

NCCL_EXPORT ncclResult_t pncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                        int root, ncclComm_t comm, cudaStream_t stream) {
  (void)sendbuff, (void)recvbuff, (void)root;
  return collective(comm, SIMGPU_BROADCAST, "ncclBroadcast", count, datatype, 1.0, 1.0, stream);
}

NCCL_EXPORT ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                                    cudaStream_t stream) {
  return pncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

NCCL_EXPORT ncclResult_t pncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                     ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  (void)sendbuff, (void)recvbuff, (void)root;
  return collective(comm, SIMGPU_REDUCE, "ncclReduce", count, datatype, 1.0, 1.0, stream, op);
}

NCCL_EXPORT ncclResult_t pncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                                   ncclComm_t comm, cudaStream_t stream) {
  (void)sendbuff;
  return p2p(comm, true, count, datatype, peer, stream);
}

NCCL_EXPORT ncclResult_t pncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                                   ncclComm_t comm, cudaStream_t stream) {
  (void)recvbuff;
  return p2p(comm, false, count, datatype, peer, stream);
}

// ---- groups: ops of a group start together on their stream ---------------------------

NCCL_EXPORT ncclResult_t pncclGroupStart() {
  tl_group_depth++;
  return ncclSuccess;
}

NCCL_EXPORT ncclResult_t pncclGroupEnd() {
  if (tl_group_depth == 0) return error(nullptr, ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  if (--tl_group_depth > 0) return ncclSuccess;
  auto group = std::move(tl_group);
  tl_group.clear();
  // One device-model group per stream, in call order; so grouped send/recv pairs that
  // would deadlock one after the other start together, as NCCL fuses them.
  ncclResult_t result = ncclSuccess;
  std::vector<bool> taken(group.size(), false);
  for (size_t i = 0; i < group.size(); ++i) {
    if (taken[i]) continue;
    std::vector<OpPlan> plans;
    for (size_t j = i; j < group.size(); ++j)
      if (!taken[j] && group[j].first == group[i].first) {
        plans.push_back(group[j].second);
        taken[j] = true;
      }
    if (simnccl::submit(group[i].first, plans) != cudaSuccess)
      result = error(plans[0].comm, ncclInvalidArgument, "invalid CUDA stream in group");
  }
  return result;
}

// ---- errors ----------------------------------------------------------------------------

NCCL_EXPORT const char* pncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

NCCL_EXPORT const char* pncclGetLastError(ncclComm_t comm) {
  return comm ? comm->last_error.c_str() : tl_last_error.c_str();
}

NCCL_ALIAS(ncclResult_t, ncclGetVersion, (int*))
NCCL_ALIAS(ncclResult_t, ncclGetUniqueId, (ncclUniqueId*))
NCCL_ALIAS(ncclResult_t, ncclCommInitRank, (ncclComm_t*, int, ncclUniqueId, int))
NCCL_ALIAS(ncclResult_t, ncclCommInitRankConfig, (ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*))
NCCL_ALIAS(ncclResult_t, ncclCommSplit, (ncclComm_t, int, int, ncclComm_t*, ncclConfig_t*))
NCCL_ALIAS(ncclResult_t, ncclCommDestroy, (ncclComm_t))
NCCL_ALIAS(ncclResult_t, ncclCommAbort, (ncclComm_t))
NCCL_ALIAS(ncclResult_t, ncclCommFinalize, (ncclComm_t))
NCCL_ALIAS(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t, ncclResult_t*))
NCCL_ALIAS(ncclResult_t, ncclCommCount, (const ncclComm_t, int*))
NCCL_ALIAS(ncclResult_t, ncclCommUserRank, (const ncclComm_t, int*))
NCCL_ALIAS(ncclResult_t, ncclCommCuDevice, (const ncclComm_t, int*))
NCCL_ALIAS(ncclResult_t, ncclAllReduce, (const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t))
NCCL_ALIAS(ncclResult_t, ncclAllGather, (const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t))
NCCL_ALIAS(ncclResult_t, ncclReduceScatter, (const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t))
NCCL_ALIAS(ncclResult_t, ncclBroadcast, (const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
NCCL_ALIAS(ncclResult_t, ncclBcast, (void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
NCCL_ALIAS(ncclResult_t, ncclReduce, (const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t, cudaStream_t))
NCCL_ALIAS(ncclResult_t, ncclSend, (const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
NCCL_ALIAS(ncclResult_t, ncclRecv, (void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
NCCL_ALIAS(ncclResult_t, ncclGroupStart, ())
NCCL_ALIAS(ncclResult_t, ncclGroupEnd, ())
NCCL_ALIAS(const char*, ncclGetErrorString, (ncclResult_t))
NCCL_ALIAS(const char*, ncclGetLastError, (ncclComm_t))
