// The device model: streams, events and the analytic timeline of every op.
//
// Every op gets, when it is enqueued, start = max(host enqueue time, end of everything it
// depends on) and end = start + duration. Nothing executes: blocking calls sleep until the
// wall clock reaches the end they wait for, and queries compare the clock with it. Only
// external ops (collectives) have an end that is not known at enqueue time; work queued
// behind them stays pending until their owner completes them, and is then timed in one
// pass (deps always precede dependents in enqueue order).
//
// Dependencies follow the CUDA programming guide: in-order streams; an op on the legacy
// default stream waits for all prior work on blocking streams, and an op on a blocking
// stream waits for prior legacy-stream work (cudaStreamNonBlocking streams are exempt);
// per-thread default streams are ordinary blocking streams.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <vector>

#include "../simgpu.h"
#include "truth.h"

namespace simgpu {

constexpr int kMarker = -1;  // zero-length ordering op (event record, wait-event, sync)

struct Op {
  int kind = kMarker;
  bool external = false;  // end decided by its owner (simgpu_op_complete)
  bool started = false;   // start known
  bool resolved = false;  // start and end known
  uint64_t ready_ns = 0;  // earliest start: enqueue time and already-resolved deps
  uint64_t dur_ns = 0;
  uint64_t start_ns = 0, end_ns = 0, wait_ns = 0;
  std::vector<std::shared_ptr<Op>> deps;  // unresolved predecessors; cleared once started
  // When its predecessors ended, leaving out the host's enqueue time: for an event's marker,
  // when the work recorded in the event ended (0: none).
  uint64_t preds_end_ns = 0;
  // A cross-stream wait (a marker with an event dependency): the event's marker until this
  // op starts, then when the work recorded in it ended (the truth's per-stream stream_wait).
  std::shared_ptr<Op> awaited;
  uint64_t awaited_end_ns = 0;
  simgpu_activity rec{};                  // what the observer and the truth get
  uint64_t link_tx_bytes = 0, link_rx_bytes = 0;  // external ops: over the device's links
};
using OpRef = std::shared_ptr<Op>;

struct Graph;  // cudart/graph_api.cpp: a graph being captured or captured

struct Stream {
  uint64_t id = 0;
  Graph* capture = nullptr;  // being captured (cudaStreamBeginCapture): work is recorded, not run
  int device = 0;
  unsigned flags = 0;
  int priority = 0;
  bool legacy = false;
  OpRef tail;  // last op enqueued; null while the stream never had work
};

struct Event {
  unsigned flags = 0;
  OpRef marker;  // null until recorded
};

// What to enqueue (one op).
struct OpDesc {
  int kind = kMarker;
  uint64_t dur_ns = 0;
  uint64_t bytes = 0;
  uint32_t flags = 0;
  const char* name = nullptr;
  const char* comm = nullptr;  // external NCCL ops: simgpu_activity.comm
  uint64_t link_tx_bytes = 0, link_rx_bytes = 0;  // external NCCL ops: their bus bytes
  bool external = false;
  // Graph replays: every node of one launch carries the launch's correlation id (0: take a
  // new one) and the graph's ids, as CUPTI reports them.
  uint32_t correlation_id = 0;
  uint32_t graph_id = 0;
  uint64_t graph_node_id = 0;
  simgpu_launch_geometry geometry{};  // kernels
};

class Model {
 public:
  static Model& get();  // aborts the process on a bad SIMGPU_CONFIG (see config.h)

  int device_count() const { return device_count_; }
  static int current_device();
  static void set_current_device(int d);

  // Maps an API stream handle to a stream; per_thread selects what 0 means (the _ptsz/_ptds
  // entry points). Returns nullptr for a handle that is not a live stream.
  Stream* stream(cudaStream_t handle, bool per_thread);
  Stream* create_stream(unsigned flags, int priority);
  bool destroy_stream(cudaStream_t handle);

  Event* create_event(unsigned flags);
  bool destroy_event(cudaEvent_t handle);
  Event* event(cudaEvent_t handle);  // nullptr if not live

  // How several descs enqueued at once relate: a group (all depend on the same predecessors,
  // and the stream's next op waits for all of them: a collective's per-rank parts) or a chain
  // (each after the one before, all submitted at one instant: a CUDA graph's nodes, which the
  // device runs back to back however long the host takes to hand them over one by one).
  enum class Order { kGroup, kChain };
  // Enqueues ops on `s` (several: see Order). `extra` is one more dependency (an event for
  // cudaStreamWaitEvent). Takes one correlation id per op that has none.
  std::vector<OpRef> enqueue(Stream* s, const std::vector<OpDesc>& descs, OpRef extra = nullptr,
                             Order order = Order::kGroup);
  OpRef enqueue(Stream* s, const OpDesc& d, OpRef extra = nullptr) { return enqueue(s, std::vector<OpDesc>{d}, extra)[0]; }

  void record_event(Event* e, Stream* s);
  OpRef marker(Event* e);  // the event's last record, or null

  // Host-side blocking: until `op` is resolved and the clock has reached its end.
  void wait(const OpRef& op);
  bool done(const OpRef& op);                // resolved and clock past its end
  OpRef tail(Stream* s);                     // what synchronizing `s` waits for
  std::vector<OpRef> device_work(int device);  // all streams' tails (cudaDeviceSynchronize)

  // External ops (simgpu_op_*).
  bool started(const OpRef& op, uint64_t* start_ns);
  void complete(const OpRef& op, uint64_t end_ns, uint64_t wait_ns);

  void set_observer(simgpu_activity_observer cb, void* user);
  void count_graph_launch();  // for the truth file

  uint32_t next_correlation_id();
  static uint32_t last_correlation_id();  // of the calling thread

  // Device time busy (all devices, merged) up to `now`: the simulated NVML's utilization.
  uint64_t busy_ns_until(uint64_t now);
  // Bytes the collectives moved over the links by `now` (the simulated NVML's NVLink counters).
  void link_bytes_until(uint64_t now, uint64_t* tx, uint64_t* rx);

 private:
  Model();
  struct DeviceState {
    Stream legacy;
    std::vector<Stream*> blocking;  // live blocking streams incl. per-thread ones
    std::vector<OpRef> retired;     // tails of destroyed blocking streams still running
  };
  // All below run with mu_ held.
  Stream* per_thread_stream(int device);
  void prune_retired(DeviceState& d, uint64_t now);
  void finish(Op& op, std::vector<simgpu_activity>& out);
  void resolve_pending(std::vector<simgpu_activity>& out);
  void advance_truth();
  // With mu_ held: counts a batch about to go to the observer (Model::wait waits for it).
  bool begin_delivery(const std::vector<simgpu_activity>& records);
  void deliver(std::vector<simgpu_activity>& records, bool counted);  // called WITHOUT mu_
  void write_truth();

 public:
  Truth& truth() { return truth_; }  // its CUPTI counters only: the rest needs mu_

 private:

  std::mutex mu_;
  std::condition_variable resolved_cv_;  // signalled whenever an op resolves
  int device_count_ = 1;
  std::vector<DeviceState> devices_;
  std::list<OpRef> pending_;  // unresolved ops in enqueue order
  std::vector<Stream*> streams_;
  std::vector<Event*> events_;
  uint64_t next_stream_id_ = 1;
  Truth truth_;
  int delivering_ = 0;  // batches handed to the observer and not finished (guarded by mu_)
  std::atomic<bool> observed_{false};
  std::mutex observer_mu_;
  simgpu_activity_observer observer_ = nullptr;
  void* observer_user_ = nullptr;
};

}  // namespace simgpu
