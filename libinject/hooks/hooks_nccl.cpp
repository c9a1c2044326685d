// NCCL wrappers: each collective gets a per-communicator sequence number (to line it up
// across ranks) and a pair of CUDA events around its enqueue, for its GPU time; a group gets
// one pair around all of it. Communicators are registered as they are created. A collective
// enqueued while its stream is captured into a CUDA graph runs nothing now (it runs at each
// launch of the graph): flagged as captured, and timed by no event pair (it would join the
// graph).
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <atomic>

#include "hooks/cuda_call.h"
#include "record/collective_timer.h"
#include "hooks/missing.h"
#include "record/recorder.h"
#include "record/registry.h"
#include "record/stamp_clock.h"

namespace gi = gpuwatch::inject;

template <>
constexpr ncclResult_t gi::hooks::MissingValue<ncclResult_t>() {
  return ncclInternalError;
}

namespace {

thread_local int tl_group_depth = 0;
thread_local uint32_t tl_group_slot = 0;
thread_local bool tl_group_timed = false;  // Begin was attempted for the current group
thread_local cudaStream_t tl_group_stream = nullptr;

size_t ElementSize(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 1;  // fp8 and any type added later
  }
}

// A communicator created before gpuwatch saw it (or by an API not wrapped) is registered
// on first use with what NCCL says about it.
gi::CommInfo* CommFor(ncclComm_t comm) {
  if (gi::CommInfo* c = gi::Communicators().Find(comm)) return c;
  static const auto count = gi::Real<decltype(&pncclCommCount)>("pncclCommCount");
  static const auto user_rank = gi::Real<decltype(&pncclCommUserRank)>("pncclCommUserRank");
  int n = 0, r = 0;
  if (count) count(comm, &n);
  if (user_rank) user_rank(comm, &r);
  return gi::Communicators().Register(comm, n, r, reinterpret_cast<uintptr_t>(comm));
}

void RegisterNew(ncclComm_t comm, uint64_t unique_hash, const gi::CommOrigin& made) {
  static const auto count = gi::Real<decltype(&pncclCommCount)>("pncclCommCount");
  static const auto user_rank = gi::Real<decltype(&pncclCommUserRank)>("pncclCommUserRank");
  int n = 0, r = 0;
  if (count) count(comm, &n);
  if (user_rank) user_rank(comm, &r);
  gi::Communicators().Register(comm, n, r, unique_hash, made);
}

constexpr gi::CommOrigin kMadeByInit{.origin = gi::kMadeByInitRank};

template <typename F>
ncclResult_t Collective(gi::Api api, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                        cudaStream_t stream, F&& call) {
  if (!gi::Recording()) return call();
  const gi::HookCostProbe cost;  // with the event pair: the hook's cost where it pays one
  gi::Record r{};
  r.api = api;
  r.bytes = count * ElementSize(type);
  r.stream = reinterpret_cast<uintptr_t>(stream);
  r.peer = peer;
  if (gi::CommInfo* c = CommFor(comm)) {
    r.comm_id = static_cast<uint32_t>(c->id);  // at most Comms::kMax
    r.seq = c->next_seq.fetch_add(1, std::memory_order_relaxed);
  }
  gi::CollectiveTimer::NoTime why = gi::CollectiveTimer::NoTime::kNone;
  gi::CollectiveTimer& timer = gi::Timer();
  const auto begin = [&] { return timer.CuptiTimes() ? timer.BeginCuptiTimed() : timer.Begin(stream, &why); };
  // One relaxed load unless a capture is open (cuda_call.h).
  const bool captured = gi::hooks::InCapture(stream);
  if (captured) r.flags |= gi::kFlagInCapture;
  uint32_t slot = 0;
  if (tl_group_depth > 0) {
    // The group is one launch: time it from its first operation's stream to its end.
    if (!tl_group_timed && !captured) {
      tl_group_slot = begin();
      tl_group_stream = stream;
      tl_group_timed = true;
    }
    if (!captured) slot = tl_group_slot;
    r.flags |= gi::kFlagInGroup;
  } else if (!captured) {
    slot = begin();
  }
  gi::EnsureRing();
  r.t_ticks = gi::Stamp();
  gi::EnterCall(api, r.t_ticks, r.stream, r.comm_id, r.seq);
  const ncclResult_t rc = call();
  r.dur_ticks = cost.StampCallEnd() - r.t_ticks;
  if (gi::CommInfo* c = gi::Communicators().Find(comm)) c->MarkReturned(r.seq);
  if (tl_group_depth == 0) timer.End(slot, stream);
  if (slot == 0) r.flags |= gi::kFlagNoGpuTime;
  if (rc != ncclSuccess && rc != ncclInProgress) r.flags |= gi::kFlagFailed;  // nothing was enqueued
  r.event_slot = slot;
  gi::Emit(r);
  gi::LeaveCall();  // after Emit: the settled time counts on it (assemble/assembler.h)
  cost.Done(r);
  return rc;
}

}  // namespace

extern "C" {

// NCCL exports each API twice, a strong pnccl* and a weak nccl* alias (the MPI "PMPI"
// pattern): gpuwatch defines nccl* and forwards to pnccl*.
#define GW_FORWARD(name) GW_REAL_T(decltype(&p##name), "p" #name)

ncclResult_t ncclAllReduce(const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t c,
                           cudaStream_t st) {
  GW_FORWARD(ncclAllReduce);
  return Collective(gi::kApiAllReduce, n, t, -1, c, st, [&] { return real(s, r, n, t, op, c, st); });
}
ncclResult_t ncclAllGather(const void* s, void* r, size_t n, ncclDataType_t t, ncclComm_t c, cudaStream_t st) {
  GW_FORWARD(ncclAllGather);
  return Collective(gi::kApiAllGather, n, t, -1, c, st, [&] { return real(s, r, n, t, c, st); });
}
ncclResult_t ncclReduceScatter(const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t c,
                               cudaStream_t st) {
  GW_FORWARD(ncclReduceScatter);
  return Collective(gi::kApiReduceScatter, n, t, -1, c, st, [&] { return real(s, r, n, t, op, c, st); });
}
ncclResult_t ncclBroadcast(const void* s, void* r, size_t n, ncclDataType_t t, int root, ncclComm_t c,
                           cudaStream_t st) {
  GW_FORWARD(ncclBroadcast);
  return Collective(gi::kApiBroadcast, n, t, root, c, st, [&] { return real(s, r, n, t, root, c, st); });
}
ncclResult_t ncclReduce(const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op, int root,
                        ncclComm_t c, cudaStream_t st) {
  GW_FORWARD(ncclReduce);
  return Collective(gi::kApiReduce, n, t, root, c, st, [&] { return real(s, r, n, t, op, root, c, st); });
}
ncclResult_t ncclSend(const void* s, size_t n, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t st) {
  GW_FORWARD(ncclSend);
  return Collective(gi::kApiSend, n, t, peer, c, st, [&] { return real(s, n, t, peer, c, st); });
}
ncclResult_t ncclRecv(void* r, size_t n, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t st) {
  GW_FORWARD(ncclRecv);
  return Collective(gi::kApiRecv, n, t, peer, c, st, [&] { return real(r, n, t, peer, c, st); });
}

ncclResult_t ncclGroupStart(void) {
  GW_FORWARD(ncclGroupStart);
  ++tl_group_depth;
  return real();
}
ncclResult_t ncclGroupEnd(void) {
  GW_FORWARD(ncclGroupEnd);
  const uint64_t t0 = gi::Stamp();
  const ncclResult_t rc = real();
  if (tl_group_depth > 0 && --tl_group_depth == 0 && tl_group_timed) {
    if (tl_group_slot != 0) {
      gi::Timer().End(tl_group_slot, tl_group_stream);
      gi::Record end{};
      end.api = gi::kGroupEnd;
      end.event_slot = tl_group_slot;
      end.t_ticks = t0;
      end.dur_ticks = gi::Stamp() - t0;
      gi::Emit(end);
    }
    tl_group_slot = 0;
    tl_group_timed = false;
    tl_group_stream = nullptr;
  }
  return rc;
}

// ---- communicators: rank, size and an id equal across the ranks of one communicator ----
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  GW_FORWARD(ncclCommInitRank);
  const ncclResult_t rc = real(comm, nranks, id, rank);
  if (rc == ncclSuccess && comm) gi::Communicators().Register(*comm, nranks, rank, gi::HashBytes(&id, sizeof id), kMadeByInit);
  return rc;
}
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* cfg) {
  GW_FORWARD(ncclCommInitRankConfig);
  const ncclResult_t rc = real(comm, nranks, id, rank, cfg);
  if (rc == ncclSuccess && comm) gi::Communicators().Register(*comm, nranks, rank, gi::HashBytes(&id, sizeof id), kMadeByInit);
  return rc;
}
ncclResult_t ncclCommInitRankScalable(ncclComm_t* comm, int nranks, int rank, int nids, ncclUniqueId* ids,
                                      ncclConfig_t* cfg) {
  GW_FORWARD(ncclCommInitRankScalable);
  const ncclResult_t rc = real(comm, nranks, rank, nids, ids, cfg);
  if (rc == ncclSuccess && comm && nids > 0) {
    gi::Communicators().Register(*comm, nranks, rank, gi::HashBytes(ids, sizeof *ids), kMadeByInit);
  }
  return rc;
}
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* cfg) {
  GW_FORWARD(ncclCommSplit);
  // Every rank of the parent calls the split (it is collective, NOCOLOR ranks too), in the
  // same order: the parent's split count tells repeated splits with one color apart.
  gi::CommInfo* parent = CommFor(comm);
  const uint64_t index = parent ? parent->splits.fetch_add(1, std::memory_order_relaxed) : 0;
  const ncclResult_t rc = real(comm, color, key, newcomm, cfg);
  if (rc == ncclSuccess && newcomm && *newcomm) {
    // Ranks that pass the same color to the same split of one parent end in one communicator.
    const uint64_t parent_hash = parent ? parent->unique_hash : 0;
    const uint64_t h[3] = {parent_hash, index, static_cast<uint64_t>(color)};
    RegisterNew(*newcomm, gi::HashBytes(h, sizeof h),
                gi::CommOrigin{.origin = gi::kMadeBySplit, .parent_hash = parent_hash, .split_index = index, .color = color, .key = key});
  }
  return rc;
}

// One process, several devices: the communicators it makes are one communicator, rank i on
// devlist[i]. No unique id to hash: the process's count of such calls stands in (the
// communicator cannot reach beyond this process).
ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  GW_FORWARD(ncclCommInitAll);
  const ncclResult_t rc = real(comms, ndev, devlist);
  static std::atomic<uint64_t> calls{0};
  if (rc == ncclSuccess && comms) {
    const uint64_t h[2] = {0x696e6974616c6cull /* "initall" */, calls.fetch_add(1)};
    const uint64_t hash = gi::HashBytes(h, sizeof h);
    for (int i = 0; i < ndev; ++i) gi::Communicators().Register(comms[i], ndev, i, hash, gi::CommOrigin{.origin = gi::kMadeByInitAll});
  }
  return rc;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  GW_FORWARD(ncclCommDestroy);
  const ncclResult_t rc = real(comm);
  if (rc == ncclSuccess) gi::Communicators().End(comm, gi::kDestroyed);
  return rc;
}
ncclResult_t ncclCommAbort(ncclComm_t comm) {
  GW_FORWARD(ncclCommAbort);
  const ncclResult_t rc = real(comm);
  if (rc == ncclSuccess) gi::Communicators().End(comm, gi::kAborted);
  return rc;
}

}  // extern "C"
