#include "device.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>

#include "clock.h"
#include "config.h"

namespace simgpu {

namespace {
thread_local int tl_device = 0;
// Per-thread default streams, one per device, created on first use (never destroyed: a
// thread's default stream lives as long as the process in this model).
thread_local std::vector<Stream*> tl_streams;

std::atomic<uint32_t> g_correlation{0};
thread_local uint32_t tl_last_correlation = 0;

// A real driver starts helper threads of its own when it creates a context (an event
// handler among them): a process that has called CUDA is never single-threaded. Modelled by
// one thread that sleeps for the process's life, every signal blocked (none is delivered to
// it). Without it a simulated run was single-threaded, and glibc and libstdc++ took their
// single-threaded shortcuts in it (shared_ptr counts without atomics, malloc without locks)
// until anything started a thread: the first thread a preloaded library started then cost
// the launch loop ~2% (docs/simulator.md), a cost no real CUDA process pays.
// SIMGPU_DRIVER_THREADS=0 leaves it out (how that figure is measured).
void StartDriverThread() {
  const char* e = std::getenv("SIMGPU_DRIVER_THREADS");
  if (e && std::string_view(e) == "0") return;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);  // the new thread inherits the mask
  std::thread([] {
    for (;;) pause();  // every signal blocked: nothing wakes it
  }).detach();
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}
}  // namespace

uint32_t Model::last_correlation_id() { return tl_last_correlation; }

Model& Model::get() {
  // Never destroyed: atexit handlers and library threads (NCCL's resolver) use it while
  // static destructors run.
  static Model* m = new Model;
  return *m;
}

Model::Model() {
  const Config& cfg = config();  // exits(2) on a bad SIMGPU_CONFIG, before any work
  device_count_ = static_cast<int>(cfg.devices);
  devices_.resize(device_count_);
  for (int i = 0; i < device_count_; ++i) {
    devices_[i].legacy.device = i;
    devices_[i].legacy.legacy = true;
    devices_[i].legacy.id = 0;
  }
  if (std::getenv("SIMGPU_TRUTH")) std::atexit([] { Model::get().write_truth(); });
  StartDriverThread();
}

int Model::current_device() { return tl_device; }
void Model::set_current_device(int d) { tl_device = d; }

uint32_t Model::next_correlation_id() {
  uint32_t id = ++g_correlation;
  tl_last_correlation = id;
  return id;
}

Stream* Model::per_thread_stream(int device) {
  if (tl_streams.size() < static_cast<size_t>(device_count_)) tl_streams.resize(device_count_, nullptr);
  Stream*& s = tl_streams[device];
  if (!s) {
    s = new Stream;
    s->id = next_stream_id_++;
    s->device = device;
    devices_[device].blocking.push_back(s);
  }
  return s;
}

Stream* Model::stream(cudaStream_t handle, bool per_thread) {
  std::lock_guard<std::mutex> lk(mu_);
  int dev = tl_device;
  if (handle == cudaStreamLegacy || (handle == nullptr && !per_thread)) return &devices_[dev].legacy;
  if (handle == cudaStreamPerThread || handle == nullptr) return per_thread_stream(dev);
  auto* s = reinterpret_cast<Stream*>(handle);
  return std::find(streams_.begin(), streams_.end(), s) != streams_.end() ? s : nullptr;
}

Stream* Model::create_stream(unsigned flags, int priority) {
  std::lock_guard<std::mutex> lk(mu_);
  auto* s = new Stream;
  s->id = next_stream_id_++;
  s->device = tl_device;
  s->flags = flags;
  s->priority = priority;
  streams_.push_back(s);
  if (!(flags & cudaStreamNonBlocking)) devices_[s->device].blocking.push_back(s);
  return s;
}

bool Model::destroy_stream(cudaStream_t handle) {
  std::lock_guard<std::mutex> lk(mu_);
  auto* s = reinterpret_cast<Stream*>(handle);
  auto it = std::find(streams_.begin(), streams_.end(), s);
  if (it == streams_.end()) return false;
  streams_.erase(it);
  DeviceState& d = devices_[s->device];
  auto& b = d.blocking;
  b.erase(std::remove(b.begin(), b.end(), s), b.end());
  // cudaStreamDestroy returns at once and the work still completes: keep the tail so that
  // device synchronization and (for blocking streams) the legacy stream still wait for it.
  if (s->tail) d.retired.push_back(s->tail);
  delete s;
  return true;
}

Event* Model::create_event(unsigned flags) {
  std::lock_guard<std::mutex> lk(mu_);
  auto* e = new Event;
  e->flags = flags;
  events_.push_back(e);
  return e;
}

bool Model::destroy_event(cudaEvent_t handle) {
  std::lock_guard<std::mutex> lk(mu_);
  auto* e = reinterpret_cast<Event*>(handle);
  auto it = std::find(events_.begin(), events_.end(), e);
  if (it == events_.end()) return false;
  events_.erase(it);
  delete e;
  return true;
}

Event* Model::event(cudaEvent_t handle) {
  std::lock_guard<std::mutex> lk(mu_);
  auto* e = reinterpret_cast<Event*>(handle);
  return std::find(events_.begin(), events_.end(), e) != events_.end() ? e : nullptr;
}

void Model::prune_retired(DeviceState& d, uint64_t now) {
  auto& r = d.retired;
  r.erase(std::remove_if(r.begin(), r.end(), [now](const OpRef& o) { return o->resolved && o->end_ns <= now; }),
          r.end());
}

// Starts `op` if all its predecessors are resolved; plain ops then resolve at once.
static bool try_start(Op& op) {
  if (op.started) return op.resolved;
  uint64_t start = op.ready_ns;
  for (const OpRef& d : op.deps) {
    if (!d->resolved) return false;
    start = std::max(start, d->end_ns);
  }
  for (const OpRef& d : op.deps) op.preds_end_ns = std::max(op.preds_end_ns, d->end_ns);
  op.deps.clear();
  if (op.awaited) {
    op.awaited_end_ns = op.awaited->preds_end_ns;  // resolved: it was a predecessor
    op.awaited.reset();
  }
  op.started = true;
  op.start_ns = start;
  if (!op.external) {
    op.end_ns = start + op.dur_ns;
    op.resolved = true;
  }
  return op.resolved;
}

void Model::finish(Op& op, std::vector<simgpu_activity>& out) {
  if (op.kind == kMarker) {
    if (op.awaited_end_ns) truth_.stream_waited(op.rec.stream_id, op.awaited_end_ns);
    return;
  }
  op.rec.start_ns = op.start_ns;
  op.rec.end_ns = op.end_ns;
  op.rec.wait_ns = op.wait_ns;
  truth_.add(op.rec);
  if (op.link_tx_bytes || op.link_rx_bytes)
    truth_.links().add(op.start_ns, op.end_ns, op.link_tx_bytes, op.link_rx_bytes, now_ns());
  out.push_back(op.rec);
}

void Model::resolve_pending(std::vector<simgpu_activity>& out) {
  // One in-order pass suffices: an op's predecessors were enqueued before it.
  for (auto it = pending_.begin(); it != pending_.end();) {
    Op& op = **it;
    if (!op.started && try_start(op)) finish(op, out);
    it = op.resolved ? pending_.erase(it) : std::next(it);
  }
}

void Model::advance_truth() {
  // No op resolved from now on can start before now (it is not enqueued yet) or before the
  // earliest possible start of a pending op.
  uint64_t w = now_ns();
  for (const OpRef& p : pending_) w = std::min(w, p->started ? p->start_ns : p->ready_ns);
  truth_.advance(w);
}

std::vector<OpRef> Model::enqueue(Stream* s, const std::vector<OpDesc>& descs, OpRef extra, Order order) {
  std::vector<OpRef> ops;
  std::vector<simgpu_activity> out;
  bool counted = false;
  {
    std::lock_guard<std::mutex> lk(mu_);
    uint64_t now = now_ns();
    DeviceState& d = devices_[s->device];
    std::vector<OpRef> preds;
    if (s->tail) preds.push_back(s->tail);
    if (extra) preds.push_back(extra);
    if (s->legacy) {
      for (Stream* b : d.blocking)
        if (b->tail) preds.push_back(b->tail);
      prune_retired(d, now);
      preds.insert(preds.end(), d.retired.begin(), d.retired.end());
    } else if (!(s->flags & cudaStreamNonBlocking) && d.legacy.tail) {
      preds.push_back(d.legacy.tail);
    }
    uint64_t ready = now, preds_end = 0;
    std::vector<OpRef> open;  // only unresolved predecessors are kept as edges
    for (const OpRef& p : preds) {
      if (p->resolved) ready = std::max(ready, p->end_ns), preds_end = std::max(preds_end, p->end_ns);
      else open.push_back(p);
    }
    for (const OpDesc& desc : descs) {
      auto op = std::make_shared<Op>();
      op->kind = desc.kind;
      op->external = desc.external;
      // Compute kernels run longer on a throttled or shared device (config.h kernel_slowdown).
      op->dur_ns = desc.kind == SIMGPU_KERNEL && !desc.external
                       ? static_cast<uint64_t>(static_cast<double>(desc.dur_ns) * config().kernel_slowdown() + 0.5)
                       : desc.dur_ns;
      op->ready_ns = ready;
      if (order == Order::kChain && !ops.empty()) {
        op->deps = {ops.back()};  // after the one before it; its predecessors are that one's
      } else {
        op->deps = open;
        op->preds_end_ns = preds_end;
      }
      op->rec.stream_id = s->id;
      // cudaStreamWaitEvent: the stream's next work waits for the event's work (the truth's stream_wait).
      if (extra && desc.kind == kMarker && descs.size() == 1) {
        if (extra->resolved) op->awaited_end_ns = extra->preds_end_ns;
        else op->awaited = extra;
      }
      if (desc.kind != kMarker) {
        op->rec.kind = static_cast<uint32_t>(desc.kind);
        op->rec.flags = desc.flags;
        op->rec.bytes = desc.bytes;
        op->rec.stream_id = s->id;
        op->rec.device = s->device;
        op->rec.correlation_id = desc.correlation_id ? desc.correlation_id : next_correlation_id();
        op->rec.name = desc.name;
        op->rec.comm = desc.comm;
        op->rec.graph_id = desc.graph_id;
        op->rec.graph_node_id = desc.graph_node_id;
        op->rec.geometry = desc.geometry;
        op->link_tx_bytes = desc.link_tx_bytes;
        op->link_rx_bytes = desc.link_rx_bytes;
      }
      ops.push_back(op);
    }
    std::vector<OpRef> added = ops;
    if (ops.size() == 1 || order == Order::kChain) {
      s->tail = ops.back();
    } else {  // a group: the stream continues after the last member ends
      auto join = std::make_shared<Op>();
      join->ready_ns = ready;
      join->deps = ops;
      s->tail = join;
      added.push_back(join);
    }
    // New ops cannot be predecessors of older pending ones, so only they need a look.
    bool any = false;
    for (const OpRef& op : added) {
      if (!try_start(*op)) {
        pending_.push_back(op);
        continue;
      }
      finish(*op, out);
      any = true;
    }
    if (any) {
      resolved_cv_.notify_all();
      advance_truth();
    }
    counted = begin_delivery(out);
  }
  deliver(out, counted);
  return ops;
}

void Model::count_graph_launch() {
  std::lock_guard<std::mutex> lk(mu_);
  truth_.add_graph_launch();
}

void Model::record_event(Event* e, Stream* s) {
  OpRef m = enqueue(s, OpDesc{});
  std::lock_guard<std::mutex> lk(mu_);
  e->marker = m;
}

OpRef Model::marker(Event* e) {
  std::lock_guard<std::mutex> lk(mu_);
  return e->marker;
}

void Model::wait(const OpRef& op) {
  if (!op) return;
  uint64_t end;
  {
    std::unique_lock<std::mutex> lk(mu_);
    // Also wait for records still on their way to the observer (a collective completed by
    // NCCL's thread): after a sync, a simulated CUPTI must already hold every finished op.
    resolved_cv_.wait(lk, [&] { return op->resolved && delivering_ == 0; });
    end = op->end_ns;
  }
  sleep_until(end);
}

bool Model::done(const OpRef& op) {
  if (!op) return true;
  std::lock_guard<std::mutex> lk(mu_);
  return op->resolved && op->end_ns <= now_ns();
}

OpRef Model::tail(Stream* s) {
  // Synchronizing the legacy stream behaves like an op on it: it covers blocking streams.
  if (s->legacy) return enqueue(s, OpDesc{});
  std::lock_guard<std::mutex> lk(mu_);
  return s->tail;
}

std::vector<OpRef> Model::device_work(int device) {
  std::lock_guard<std::mutex> lk(mu_);
  DeviceState& d = devices_[device];
  std::vector<OpRef> w;
  if (d.legacy.tail) w.push_back(d.legacy.tail);
  for (Stream* s : d.blocking)
    if (s->tail) w.push_back(s->tail);
  for (Stream* s : streams_)
    if (s->device == device && (s->flags & cudaStreamNonBlocking) && s->tail) w.push_back(s->tail);
  prune_retired(d, now_ns());
  w.insert(w.end(), d.retired.begin(), d.retired.end());
  return w;
}

bool Model::started(const OpRef& op, uint64_t* start_ns) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!op->started) return false;
  *start_ns = op->start_ns;
  return true;
}

void Model::complete(const OpRef& op, uint64_t end_ns, uint64_t wait_ns) {
  std::vector<simgpu_activity> out;
  bool counted = false;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (!op->started || op->resolved) return;
    op->end_ns = std::max(end_ns, op->start_ns);
    op->wait_ns = wait_ns;
    op->resolved = true;
    finish(*op, out);
    resolve_pending(out);
    resolved_cv_.notify_all();
    advance_truth();
    counted = begin_delivery(out);
  }
  deliver(out, counted);
}

void Model::set_observer(simgpu_activity_observer cb, void* user) {
  std::lock_guard<std::mutex> lk(observer_mu_);
  observer_ = cb;
  observer_user_ = user;
  observed_.store(cb != nullptr, std::memory_order_relaxed);
}

bool Model::begin_delivery(const std::vector<simgpu_activity>& records) {
  if (records.empty() || !observed_.load(std::memory_order_relaxed)) return false;
  ++delivering_;
  return true;
}

void Model::deliver(std::vector<simgpu_activity>& records, bool counted) {
  if (records.empty()) return;
  simgpu_activity_observer cb;
  void* user;
  {
    std::lock_guard<std::mutex> lk(observer_mu_);
    cb = observer_;
    user = observer_user_;
  }
  if (cb)
    for (const simgpu_activity& r : records) cb(&r, user);
  if (!counted) return;
  std::lock_guard<std::mutex> lk(mu_);
  if (--delivering_ == 0) resolved_cv_.notify_all();
}

uint64_t Model::busy_ns_until(uint64_t now) {
  std::lock_guard<std::mutex> lk(mu_);
  advance_truth();
  return truth_.busy_until(now);
}

void Model::link_bytes_until(uint64_t now, uint64_t* tx, uint64_t* rx) {
  std::lock_guard<std::mutex> lk(mu_);
  truth_.links().until(now, tx, rx);
}

void Model::write_truth() {
  const char* dir = std::getenv("SIMGPU_TRUTH");
  if (!dir || !*dir) return;
  // SIMGPU_RANK first: a rank started by mpirun or srun has no RANK, and setting one would
  // change which launcher variables the profiler under test names the rank from.
  const char* rank_env = std::getenv("SIMGPU_RANK");
  if (!rank_env || !*rank_env) rank_env = std::getenv("RANK");
  int rank = rank_env ? std::atoi(rank_env) : 0;
  std::lock_guard<std::mutex> lk(mu_);
  if (!truth_.write(dir, rank))
    std::fprintf(stderr, "simgpu: cannot write truth file in %s: %s\n", dir, std::strerror(errno));
}

}  // namespace simgpu
