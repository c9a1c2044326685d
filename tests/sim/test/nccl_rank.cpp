// One rank of the multi-process NCCL tests: `sim_nccl_rank ID_HEX RANK NRANKS LATE_RANK LATE_MS`.
// Prints key=value measurements (stopwatch around calls, and the device model's own view
// of the measured collective through the activity observer).
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "simgpu.h"

namespace {
std::mutex g_mu;
// By correlation id: the record may arrive (from the progress thread) before the enqueuing
// call has even returned.
std::map<uint32_t, simgpu_activity> g_records;
uint64_t g_wait_sum = 0;

void observe(const simgpu_activity* r, void*) {
  std::lock_guard<std::mutex> lk(g_mu);
  g_wait_sum += r->wait_ns;
  g_records[r->correlation_id] = *r;
}

#define NC(x)                                                                                   \
  do {                                                                                          \
    ncclResult_t r_ = (x);                                                                      \
    if (r_ != ncclSuccess) {                                                                    \
      std::fprintf(stderr, "%s failed: %s (%s)\n", #x, ncclGetErrorString(r_), ncclGetLastError(nullptr)); \
      return 1;                                                                                 \
    }                                                                                           \
  } while (0)
#define CK(x)                                                                   \
  do {                                                                          \
    if ((x) != cudaSuccess) {                                                   \
      std::fprintf(stderr, "%s failed\n", #x);                                  \
      return 1;                                                                 \
    }                                                                           \
  } while (0)
}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s ID_HEX RANK NRANKS LATE_RANK LATE_MS\n", argv[0]);
    return 2;
  }
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  for (size_t i = 0; i < sizeof id.internal && argv[1][2 * i] && argv[1][2 * i + 1]; ++i)
    id.internal[i] = static_cast<char>(std::stoi(std::string(argv[1] + 2 * i, 2), nullptr, 16));
  int rank = std::atoi(argv[2]), n = std::atoi(argv[3]), late = std::atoi(argv[4]);
  int late_ms = std::atoi(argv[5]);
  simgpu_set_activity_observer(&observe, nullptr);

  CK(cudaSetDevice(rank));
  ncclComm_t comm;
  NC(ncclCommInitRank(&comm, n, id, rank));
  int count = 0, me = -1, dev = -1;
  NC(ncclCommCount(comm, &count));
  NC(ncclCommUserRank(comm, &me));
  NC(ncclCommCuDevice(comm, &dev));
  if (count != n || me != rank || dev != rank) return 3;
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  float* buf = nullptr;
  CK(cudaMalloc(reinterpret_cast<void**>(&buf), 64 << 20));

  // Warm-up: every rank returns from this sync at the same analytic end time.
  NC(ncclAllReduce(buf, buf, 1024, ncclFloat32, ncclSum, comm, s));
  CK(cudaStreamSynchronize(s));
  if (rank == late) std::this_thread::sleep_for(std::chrono::milliseconds(late_ms));
  auto t0 = std::chrono::steady_clock::now();
  NC(ncclAllReduce(buf, buf, 8 << 20, ncclFloat32, ncclSum, comm, s));
  uint32_t watch = simgpu_last_correlation_id();  // the measured collective
  CK(cudaStreamSynchronize(s));
  double coll_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  // Grouped ring exchange: without the group, send-before-recv on every rank would deadlock.
  NC(ncclGroupStart());
  NC(ncclSend(buf, 1000, ncclFloat32, (rank + 1) % n, comm, s));
  NC(ncclRecv(buf, 1000, ncclFloat32, (rank + n - 1) % n, comm, s));
  NC(ncclGroupEnd());
  NC(ncclAllGather(buf, buf, 1000, ncclFloat32, comm, s));
  NC(ncclReduceScatter(buf, buf, 1000, ncclFloat32, ncclSum, comm, s));
  NC(ncclBroadcast(buf, buf, 1000, ncclFloat16, 0, comm, s));
  NC(ncclReduce(buf, buf, 1000, ncclFloat64, ncclSum, 0, comm, s));
  CK(cudaStreamSynchronize(s));

  // Split by parity; each part runs its own collective.
  ncclComm_t half;
  NC(ncclCommSplit(comm, rank % 2, rank, &half, nullptr));
  int half_n = 0, half_rank = -1;
  NC(ncclCommCount(half, &half_n));
  NC(ncclCommUserRank(half, &half_rank));
  NC(ncclAllReduce(buf, buf, 1024, ncclFloat32, ncclSum, half, s));
  CK(cudaStreamSynchronize(s));
  NC(ncclCommDestroy(half));
  NC(ncclCommDestroy(comm));

  std::lock_guard<std::mutex> lk(g_mu);
  const simgpu_activity& g_watched = g_records[watch];
  // When this rank reached the collective, on the clock every process shares (steady_clock
  // is CLOCK_MONOTONIC): the test sets the simulator's waits against the ranks' arrivals.
  const double arrive_ms = std::chrono::duration<double, std::milli>(t0.time_since_epoch()).count();
  std::printf("rank=%d arrive_ms=%.4f coll_ms=%.4f wait_ms=%.4f device_ms=%.4f wait_sum_ms=%.6f half_n=%d half_rank=%d\n",
              rank, arrive_ms, coll_ms, g_watched.wait_ns / 1e6, (g_watched.end_ns - g_watched.start_ns) / 1e6, g_wait_sum / 1e6,
              half_n, half_rank);
  return 0;
}
