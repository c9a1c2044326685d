// See rank_player.h. Every CUDA/NCCL call the scenario makes goes through here, and each
// stopwatch below covers exactly the calls named next to it; docs/scenarios.md lists them
// because downstream tests compare a profiler's summary with these numbers.
#include "rank_player.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <set>
#include <stdexcept>
#include <vector>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <nvtx3/nvToolsExt.h>

#include "host_work.h"
#include "rendezvous_file.h"
#include "spin_kernel.h"
#include "truth.h"

namespace gpuwatch::scenario {
namespace {

// Whether the scheduler took the thread away (an involuntary context switch) since this was
// made, around a timed call: the time away may fall between the driver's clock reads and the
// hook's, where the summary cannot see it (truth.h's preempted_s; tests/e2e/truth_check.cpp
// allows for it).
class PreemptionWatch {
 public:
  PreemptionWatch() : at_(Switches()) {}
  bool preempted() const { return Switches() != at_; }

 private:
  static long Switches() {
    rusage u{};
    getrusage(RUSAGE_THREAD, &u);
    return u.ru_nivcsw;
  }
  long at_;
};

constexpr double kUniqueIdTimeoutS = 60;  // rank 0 publishes within ms; this covers a slow start

struct PlayError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check(cudaError_t e, const char* call) {
  if (e != cudaSuccess) throw PlayError(std::string(call) + ": " + cudaGetErrorString(e));
}
void check(ncclResult_t r, const char* call) {
  if (r != ncclSuccess) throw PlayError(std::string(call) + ": " + ncclGetErrorString(r));
}

class Player {
 public:
  Player(const Scenario& sc, const PlayerOptions& opt) : sc_(sc), opt_(opt), scale_(sc.scale_for(opt.rank)) {}

  void setup();
  void run();
  void teardown();
  const TruthRecorder& truth() const { return truth_; }
  std::string where() const { return where_; }

 private:
  void play(const Op& op);
  void collective(const Op& op);
  void point_to_point(const Op& op);
  void split_groups();
  ncclComm_t comm_for(CommGroup g) const;
  void order_comm_after_compute();
  void join_comm(const char* truth_key);
  void capture_graphs();

  const Scenario& sc_;
  const PlayerOptions& opt_;
  const RankScale scale_;
  TruthRecorder truth_;
  double host_late_s_ = 0;  // the host ops' time past their deadlines (truth's host_late_s)
  ReadFeeder feeder_;    // started by the first `"wait": "read"` host op
  LoaderWorker loader_;  // started by the first `"wait": "cpu"` host op
  std::string where_ = "setup";

  cudaStream_t compute_ = nullptr, comm_stream_ = nullptr;
  cudaEvent_t compute_ready_ = nullptr, comm_done_ = nullptr, sync_event_ = nullptr;
  // `"stream": "side"` kernels: made at setup only when a scenario has some, so the others
  // make the calls they always made.
  cudaStream_t side_ = nullptr;
  cudaEvent_t side_ready_ = nullptr, side_done_ = nullptr;
  void* dev_ = nullptr;
  std::vector<void*> kept_;  // `alloc` ops' memory, freed at teardown
  void* pinned_ = nullptr;
  char* pageable_ = nullptr;
  ncclComm_t comm_ = nullptr;                   // the world
  std::map<CommGroup, ncclComm_t> group_comms_;  // split from the world for the ops that name a group
  std::map<const Op*, cudaGraphExec_t> graphs_;  // each `graph` op, captured at setup
  unsigned sm_count_ = 1;  // the device's SMs: a kernels op's grid unless it says `blocks`
};

// Each `graph` op becomes one executable graph: its spin kernels captured on the compute
// stream, as torch.cuda.graphs / torch.compile(mode="reduce-overhead") capture a step.
void Player::capture_graphs() {
  for (const Op* op : graph_ops(sc_)) {
    const auto ns = static_cast<unsigned long long>(op->us * scale_.kernels * 1e3 + 0.5);
    check(cudaStreamBeginCapture(compute_, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    for (std::uint64_t i = 0; i < op->count; ++i) launch_spin(ns, sm_count_, compute_);
    cudaGraph_t graph = nullptr;
    check(cudaStreamEndCapture(compute_, &graph), "cudaStreamEndCapture");
    check(cudaGetLastError(), "kernel launch during capture (cudaGetLastError)");
    cudaGraphExec_t exec = nullptr;
    check(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
    check(cudaGraphDestroy(graph), "cudaGraphDestroy");
    graphs_[op] = exec;
  }
}

void Player::setup() {
  auto t0 = Clock::now();
  int ndev = 0;
  check(cudaGetDeviceCount(&ndev), "cudaGetDeviceCount");
  if (ndev <= 0) throw PlayError("cudaGetDeviceCount: no device");
  check(cudaSetDevice(opt_.local_rank % ndev), "cudaSetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, opt_.local_rank % ndev), "cudaGetDeviceProperties");
  sm_count_ = prop.multiProcessorCount > 0 ? static_cast<unsigned>(prop.multiProcessorCount) : 1;
  check(cudaStreamCreate(&compute_), "cudaStreamCreate");
  check(cudaStreamCreate(&comm_stream_), "cudaStreamCreate");
  // Timing is never read from these events; DisableTiming makes them the cheap kind DDP uses.
  check(cudaEventCreateWithFlags(&compute_ready_, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  check(cudaEventCreateWithFlags(&comm_done_, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  check(cudaEventCreateWithFlags(&sync_event_, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  check(cudaMalloc(&dev_, device_buffer_bytes(sc_)), "cudaMalloc");
  if (auto n = host_buffer_bytes(sc_, true)) check(cudaMallocHost(&pinned_, n), "cudaMallocHost");
  if (auto n = host_buffer_bytes(sc_, false)) {
    pageable_ = static_cast<char*>(std::malloc(n));
    if (!pageable_) throw PlayError("malloc of the pageable buffer failed");
    // Touch every page now so that page faults are not timed inside the first copies.
    std::memset(pageable_, 1, n);
  }

  // Only scenarios with library kernels look the driver entry point up, so older scenarios
  // make exactly the calls they always made.
  bool library = false, triton = false;
  for (const Op* op : all_ops(sc_)) {
    library |= op->kind == OpKind::Kernels && op->via == Via::Library;
    triton |= op->kind == OpKind::Kernels && op->via == Via::Triton;
  }
  if (library) check(init_library_launch(), "cudaGetDriverEntryPointByVersion(cuLaunchKernel) / cudaGetFuncBySymbol");
  if (triton) check(init_triton_launch(), "dlsym(libcuda.so.1, cuLaunchKernelEx) / cudaGetFuncBySymbol");
  capture_graphs();
  bool side = false;
  for (const Op* op : all_ops(sc_)) side |= op->kind == OpKind::Kernels && op->side;
  if (side) {
    check(cudaStreamCreate(&side_), "cudaStreamCreate");
    check(cudaEventCreateWithFlags(&side_ready_, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    check(cudaEventCreateWithFlags(&side_done_, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  }

  ncclUniqueId id;
  if (opt_.rank == 0) {
    check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    if (opt_.world_size > 1) publish_blob(opt_.run_dir, "nccl-unique-id", &id, sizeof id);
  } else {
    auto blob = wait_blob(opt_.run_dir, "nccl-unique-id", sizeof id, kUniqueIdTimeoutS);
    std::memcpy(&id, blob.data(), sizeof id);
  }
  check(ncclCommInitRank(&comm_, opt_.world_size, id, opt_.rank), "ncclCommInitRank");
  // Init returns once every rank has joined, so every rank has read the id: rank 0 takes it
  // and its directory away (a launcher-started run has no parent to do it).
  if (opt_.rank == 0 && opt_.world_size > 1) unpublish_blob(opt_.run_dir, "nccl-unique-id");
  split_groups();
  truth_.set("setup_s", seconds_between(t0, Clock::now()));
}

// One ncclCommSplit of the world per group the scenario uses, as Megatron's
// initialize_model_parallel makes its TP, DP and PP groups (rank_layout.h): every rank splits
// in the same order (the split is collective), color = which group, key = index in it.
void Player::split_groups() {
  std::set<CommGroup> used;
  for (const Op* op : all_ops(sc_))
    if (is_collective(op->kind) || is_p2p(op->kind)) used.insert(op->group);
  const RankLayout layout = sc_.layout();
  for (CommGroup g : {CommGroup::Dp, CommGroup::Tp, CommGroup::Pp}) {
    if (!used.count(g)) continue;
    ncclComm_t c = nullptr;
    check(ncclCommSplit(comm_, layout.color(g, opt_.rank), layout.index(g, opt_.rank), &c, nullptr), "ncclCommSplit");
    group_comms_[g] = c;
  }
}

ncclComm_t Player::comm_for(CommGroup g) const {
  auto it = group_comms_.find(g);
  return it == group_comms_.end() ? comm_ : it->second;
}

// DDP orders the gradient all-reduce after the backward kernels with an event.
void Player::order_comm_after_compute() {
  auto t0 = Clock::now();
  check(cudaEventRecord(compute_ready_, compute_), "cudaEventRecord");
  check(cudaStreamWaitEvent(comm_stream_, compute_ready_, 0), "cudaStreamWaitEvent");
  truth_.add("comm_order", seconds_between(t0, Clock::now()));
}

// Pipeline parallelism: activations to the next stage, from the previous one, on the PP
// communicator (peer = the stage); the compute stream waits for a recv before it goes on, as
// the next stage's forward needs its input.
void Player::point_to_point(const Op& op) {
  if (!plays(sc_, op, opt_.rank)) return;
  order_comm_after_compute();
  const bool send = op.kind == OpKind::Send;
  const int stage = sc_.layout().coords(opt_.rank).pp;
  const int peer = send ? stage + 1 : stage - 1;
  ncclComm_t comm = comm_for(CommGroup::Pp);
  auto c0 = Clock::now();
  ncclResult_t r = send ? ncclSend(dev_, op.bytes / 4, ncclFloat, peer, comm, comm_stream_)
                        : ncclRecv(dev_, op.bytes / 4, ncclFloat, peer, comm, comm_stream_);
  auto c1 = Clock::now();
  check(r, send ? "ncclSend" : "ncclRecv");
  truth_.add(op_name(op.kind), seconds_between(c0, c1), op.bytes);
  if (!send) join_comm("recv_join");
}

void Player::collective(const Op& op) {
  const size_t count = op.bytes / 4;
  order_comm_after_compute();
  ncclComm_t comm = comm_for(op.group);
  char* buf = static_cast<char*>(dev_);
  const int index = sc_.layout().index(op.group, opt_.rank);
  const size_t slice = size_t(index) * op.bytes;  // in-place layouts as NCCL documents them
  ncclResult_t r = ncclSuccess;
  const char* call = "";
  auto c0 = Clock::now();
  switch (op.kind) {
    case OpKind::AllReduce:
      r = ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, comm_stream_);
      call = "ncclAllReduce";
      break;
    case OpKind::AllGather:
      r = ncclAllGather(buf + slice, buf, count, ncclFloat, comm, comm_stream_);
      call = "ncclAllGather";
      break;
    case OpKind::ReduceScatter:
      r = ncclReduceScatter(buf, buf + slice, count, ncclFloat, ncclSum, comm, comm_stream_);
      call = "ncclReduceScatter";
      break;
    case OpKind::Broadcast:
      r = ncclBroadcast(buf, buf, count, ncclFloat, 0, comm, comm_stream_);
      call = "ncclBroadcast";
      break;
    default:
      throw PlayError("not a collective");
  }
  auto c1 = Clock::now();
  check(r, call);
  truth_.add(op_name(op.kind), seconds_between(c0, c1), collective_bytes(op.kind, op.bytes, group_size(sc_, op)));
  // Not overlapped: the next ops need its result, so the compute stream waits for it at once
  // (its time is exposed). Overlapped: it runs beside the next ops until the step's join.
  if (!op.overlap) join_comm("coll_join");
}

// The compute stream waits for everything queued on the comm stream so far.
void Player::join_comm(const char* truth_key) {
  auto w0 = Clock::now();
  check(cudaEventRecord(comm_done_, comm_stream_), "cudaEventRecord");
  check(cudaStreamWaitEvent(compute_, comm_done_, 0), "cudaStreamWaitEvent");
  truth_.add(truth_key, seconds_between(w0, Clock::now()));
}

void Player::play(const Op& op) {
  switch (op.kind) {
    case OpKind::Host: {
      auto t0 = Clock::now();
      const auto deadline =
          t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(op.ms * scale_.host));
      if (op.wait == HostWait::Cpu) loader_.load_until(deadline);
      else if (op.wait == HostWait::Read) feeder_.read_until(deadline, op.read_mbps);
      else host_sleep(deadline);
      const auto end = Clock::now();
      truth_.add("host", seconds_between(t0, end));
      host_late_s_ += seconds_between(deadline, end);
      break;
    }
    case OpKind::H2D:
    case OpKind::D2H: {
      const bool h2d = op.kind == OpKind::H2D;
      void* host = op.pinned ? pinned_ : pageable_;
      void* dst = h2d ? dev_ : host;
      const void* src = h2d ? host : dev_;
      const cudaMemcpyKind kind = h2d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
      const PreemptionWatch watch;
      auto t0 = Clock::now();
      cudaError_t e = op.async ? cudaMemcpyAsync(dst, src, op.bytes, kind, compute_) : cudaMemcpy(dst, src, op.bytes, kind);
      auto t1 = Clock::now();
      check(e, op.async ? "cudaMemcpyAsync" : "cudaMemcpy");
      truth_.add(op_name(op.kind), seconds_between(t0, t1), op.bytes, 1, watch.preempted());
      break;
    }
    case OpKind::Kernels: {
      const auto ns = static_cast<unsigned long long>(op.us * scale_.kernels * 1e3 + 0.5);
      const bool range = sc_.nvtx && !op.name.empty();
      if (range) nvtxRangePushA(op.name.c_str());
      // Sum the launch calls only: the loop, the clock reads and NVTX are not launch time.
      Clock::duration in_launch{};
      const bool library = op.via != Via::Runtime;
      const unsigned blocks = op.blocks ? static_cast<unsigned>(op.blocks) : sm_count_;
      // A side stream's kernels start after the compute stream's work so far, and the compute
      // stream's next work waits for them (a cross-stream dependency both ways).
      cudaStream_t stream = compute_;
      if (op.side) {
        check(cudaEventRecord(side_ready_, compute_), "cudaEventRecord");
        check(cudaStreamWaitEvent(side_, side_ready_, 0), "cudaStreamWaitEvent");
        stream = side_;
      }
      int driver_error = 0;  // CUresult of the first failed driver launch
      for (std::uint64_t i = 0; i < op.count; ++i) {
        auto t0 = Clock::now();
        if (library) {
          const int r = op.via == Via::Triton ? launch_spin_triton(ns, blocks, stream) : launch_spin_library(ns, blocks, stream);
          in_launch += Clock::now() - t0;
          if (r != 0 && driver_error == 0) driver_error = r;
        } else {
          launch_spin(ns, blocks, stream);
          in_launch += Clock::now() - t0;
        }
        // PyTorch's C10_CUDA_KERNEL_LAUNCH_CHECK: outside the launch's time, as the hooks see it.
        if (op.check) check(cudaGetLastError(), "kernel launch (cudaGetLastError)");
      }
      if (op.side) {
        check(cudaEventRecord(side_done_, side_), "cudaEventRecord");
        check(cudaStreamWaitEvent(compute_, side_done_, 0), "cudaStreamWaitEvent");
      }
      if (range) nvtxRangePop();
      truth_.add(library ? "kernels_library" : "kernels", std::chrono::duration<double>(in_launch).count(), 0, op.count);
      truth_.add_blocks(blocks, op.count);
      if (driver_error) throw PlayError("cuLaunchKernel: CUresult " + std::to_string(driver_error));
      // Sticky launch errors are checked once per op, outside the stopwatch.
      check(cudaGetLastError(), "kernel launch (cudaGetLastError)");
      break;
    }
    case OpKind::Graph: {
      // Sum the launch calls only, as for kernels.
      Clock::duration in_launch{};
      cudaError_t e = cudaSuccess;
      for (std::uint64_t i = 0; i < op.replays && e == cudaSuccess; ++i) {
        auto t0 = Clock::now();
        e = cudaGraphLaunch(graphs_.at(&op), compute_);
        in_launch += Clock::now() - t0;
      }
      check(e, "cudaGraphLaunch");
      truth_.add("graph", std::chrono::duration<double>(in_launch).count(), 0, op.replays);
      truth_.add("graph_kernels", 0, 0, op.replays * op.count);
      break;
    }
    case OpKind::Memset: {
      auto t0 = Clock::now();
      cudaError_t e = cudaMemsetAsync(dev_, 0, op.bytes, compute_);
      auto t1 = Clock::now();
      check(e, "cudaMemsetAsync");
      truth_.add("memset", seconds_between(t0, t1), op.bytes);
      break;
    }
    case OpKind::Item: {
      // tensor.item(): a 4-byte copy into a pageable local, then wait for the stream.
      float value = 0;
      const PreemptionWatch watch;
      auto t0 = Clock::now();
      cudaError_t e1 = cudaMemcpyAsync(&value, dev_, sizeof value, cudaMemcpyDeviceToHost, compute_);
      cudaError_t e2 = cudaStreamSynchronize(compute_);
      auto t1 = Clock::now();
      check(e1, "cudaMemcpyAsync");
      check(e2, "cudaStreamSynchronize");
      truth_.add("item", seconds_between(t0, t1), sizeof value, 1, watch.preempted());
      break;
    }
    case OpKind::Alloc: {
      // A tensor that stays: the device memory the rank holds grows by `bytes`.
      void* p = nullptr;
      auto t0 = Clock::now();
      cudaError_t e = cudaMalloc(&p, op.bytes);
      auto t1 = Clock::now();
      check(e, "cudaMalloc");
      kept_.push_back(p);
      truth_.add("alloc", seconds_between(t0, t1), op.bytes);
      break;
    }
    case OpKind::Sync: {
      const PreemptionWatch watch;
      auto t0 = Clock::now();
      const char* key = "sync_stream";
      cudaError_t e = cudaSuccess;
      const char* call = "cudaStreamSynchronize";
      if (op.what == SyncWhat::Stream) {
        e = cudaStreamSynchronize(compute_);
      } else if (op.what == SyncWhat::Device) {
        key = "sync_device";
        call = "cudaDeviceSynchronize";
        e = cudaDeviceSynchronize();
      } else {
        key = "sync_event";
        call = "cudaEventRecord";
        e = cudaEventRecord(sync_event_, compute_);
        if (e == cudaSuccess) {
          call = "cudaEventSynchronize";
          e = cudaEventSynchronize(sync_event_);
        }
      }
      auto t1 = Clock::now();
      check(e, call);
      const bool preempted = watch.preempted();
      truth_.add("sync", seconds_between(t0, t1), 0, 1, preempted);
      truth_.add(key, seconds_between(t0, t1), 0, 1, preempted);
      break;
    }
    case OpKind::Send:
    case OpKind::Recv:
      point_to_point(op);
      break;
    default:
      collective(op);
  }
}

void Player::run() {
  WakeUpProbe probe;  // the reference for the host ops' lateness (host_work.h)
  if (!opt_.truth_dir.empty()) probe.start();
  const auto start = Clock::now();
  for (int s = 0; s < sc_.steps; ++s) {
    if (sc_.nvtx) nvtxRangePushA("train_step");
    for (const Op* op : sc_.ops_for_step(s)) {
      where_ = "step " + std::to_string(s) + ", " + op->where + " (" + op_name(op->kind) + ")";
      play(*op);
    }
    where_ = "step " + std::to_string(s) + ", end of step";
    // The next step's compute waits for this step's communication (DDP's final wait).
    join_comm("step_join");
    if (sc_.nvtx) nvtxRangePop();
  }
  truth_.set("wall_s", seconds_between(start, Clock::now()));
  truth_.set("steps", sc_.steps);
  truth_.set("host_late_s", host_late_s_);
  probe.stop();
  if (!opt_.truth_dir.empty()) {
    truth_.set("wake_late_s", probe.mean_late_s());
    truth_.set("wakes", probe.wakes());
  }
}

void Player::teardown() {
  where_ = "teardown";
  auto t0 = Clock::now();
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  truth_.set("final_sync_s", seconds_between(t0, Clock::now()));
  for (auto& [op, exec] : graphs_) check(cudaGraphExecDestroy(exec), "cudaGraphExecDestroy");
  for (auto& [g, c] : group_comms_) check(ncclCommDestroy(c), "ncclCommDestroy");
  group_comms_.clear();
  check(ncclCommDestroy(comm_), "ncclCommDestroy");
  comm_ = nullptr;
  if (pinned_) check(cudaFreeHost(pinned_), "cudaFreeHost");
  std::free(pageable_);
  check(cudaFree(dev_), "cudaFree");
  for (void* p : kept_) check(cudaFree(p), "cudaFree");
  for (cudaEvent_t ev : {compute_ready_, comm_done_, sync_event_}) check(cudaEventDestroy(ev), "cudaEventDestroy");
  if (side_) {
    check(cudaEventDestroy(side_ready_), "cudaEventDestroy");
    check(cudaEventDestroy(side_done_), "cudaEventDestroy");
    check(cudaStreamDestroy(side_), "cudaStreamDestroy");
  }
  check(cudaStreamDestroy(comm_stream_), "cudaStreamDestroy");
  check(cudaStreamDestroy(compute_), "cudaStreamDestroy");
  truth_.set("teardown_s", seconds_between(t0, Clock::now()));
}

}  // namespace

int play_rank(const Scenario& sc, const PlayerOptions& opt) {
  // Sleep precision for `host` ops (see host_wait); harmless if refused.
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  Player p(sc, opt);
  try {
    p.setup();
    p.run();
    p.teardown();
    if (!opt.truth_dir.empty()) {
      TruthRecorder t = p.truth();
      t.set("world_size", opt.world_size);
      t.set("scenario", sc.name);
      t.write(opt.truth_dir, opt.rank);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpuwatch-scenario rank %d: %s: %s\n", opt.rank, p.where().c_str(), e.what());
    return 1;
  }
  return 0;
}

}  // namespace gpuwatch::scenario
