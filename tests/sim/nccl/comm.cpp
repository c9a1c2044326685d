#include "comm.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <list>
#include <mutex>
#include <pthread.h>
#include <thread>

#include "../model/clock.h"

namespace simnccl {

namespace {

constexpr auto kPoll = std::chrono::microseconds(50);
constexpr auto kJoinTimeout = std::chrono::seconds(120);

struct Pending {
  OpPlan plan;
  simgpu_op* op = nullptr;
  bool posted = false;
  uint64_t arrival = 0;
};

struct Completion {
  simgpu_op* op;
  uint64_t end_ns, wait_ns;
};

// Lock order: g_mu, then the device model's lock (inside simgpu_*). Ops are completed
// after g_mu is released, because completion may call the user's activity observer.
// Leaked on purpose: the detached progress thread waits on them until the process ends, and
// destroying a condition variable something waits on hangs exit (pthread_cond_destroy).
std::mutex& g_mu = *new std::mutex;
std::condition_variable& g_cv = *new std::condition_variable;
std::list<Pending>& g_pending = *new std::list<Pending>;
bool g_thread_started = false;
int g_launching = 0;  // submits between their wake of the progress thread and their push

Channel channel_of(const OpPlan& p) {
  return p.src < 0 ? p.comm->seg.collectives() : p.comm->seg.pair(p.src, p.dst);
}

LocalChannel& local_of(const OpPlan& p) {
  return p.src < 0 ? p.comm->coll_local : p.comm->pair_local[p.src * p.comm->nranks + p.dst];
}

void mark_resolved(const OpPlan& p) {
  LocalChannel& l = local_of(p);
  l.ahead.insert(p.seq);
  while (!l.ahead.empty() && *l.ahead.begin() == l.done) {
    l.ahead.erase(l.ahead.begin());
    l.done++;
  }
  channel_of(p).done[p.participant].store(l.done, std::memory_order_release);
  p.comm->in_flight--;
}

// One pass over the pending ops; g_mu held.
void progress(std::vector<Completion>& done) {
  for (auto it = g_pending.begin(); it != g_pending.end();) {
    Pending& q = *it;
    Channel ch = channel_of(q.plan);
    // Arrival times are analytic: post as soon as the device model knows the op's start,
    // even if the wall clock has not reached it yet.
    if (!q.posted && simgpu_op_start(q.op, &q.arrival) && ch.can_post(q.plan.seq)) {
      ch.post(q.plan.seq, q.plan.participant, q.arrival);
      q.posted = true;
    }
    uint64_t arrivals[kMaxRanks];
    if (q.posted && ch.gather(q.plan.seq, arrivals)) {
      uint64_t last = *std::max_element(arrivals, arrivals + ch.m);
      done.push_back(Completion{q.op, last + q.plan.duration_ns, last - q.arrival});
      mark_resolved(q.plan);
      it = g_pending.erase(it);
      continue;
    }
    ++it;
  }
}

void progress_thread() {
  std::unique_lock<std::mutex> lk(g_mu);
  for (;;) {
    // Sleep while nothing is pending and no launch is on its way (submit wakes it first).
    g_cv.wait(lk, [] { return !g_pending.empty() || g_launching > 0; });
    if (g_pending.empty()) {  // the launch comes within its host time
      lk.unlock();
      std::this_thread::yield();
      lk.lock();
      continue;
    }
    std::vector<Completion> done;
    progress(done);
    lk.unlock();
    for (const Completion& c : done) {
      simgpu_op_complete(c.op, c.end_ns, c.wait_ns);
      simgpu_op_release(c.op);
    }
    g_cv.notify_all();  // drain() waits for in_flight to drop
    // Peers post from other processes: poll while anything is pending. After a completion
    // go round at once: the next collective on the stream may start now (one per poll made
    // a loop of back-to-back 1-rank all-reduces take 256 polls per 256 calls).
    if (done.empty()) std::this_thread::sleep_for(kPoll);
    lk.lock();
  }
}

void start_thread_locked() {
  if (g_thread_started) return;
  g_thread_started = true;
  // Block all signals in the helper so they keep going to the application's threads.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  std::thread(progress_thread).detach();  // lives as long as the process
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

}  // namespace

int submit(cudaStream_t stream, const std::vector<OpPlan>& plans) {
  // The progress thread is woken first, during NCCL's host work before its launch
  // (nccl_launch_us). Woken after the launch, it took the launching thread's core for 9-15 us
  // (median, 2-core VM) before the call could return: host time after the kernel is on its
  // way, which real NCCL spends little of, and which a profiler timing the collective from
  // the call's return (CUDA event pairs, libinject's CollectiveTimer) would take off it.
  {
    std::lock_guard<std::mutex> lk(g_mu);
    start_thread_locked();
    ++g_launching;
  }
  g_cv.notify_all();
  simgpu::spend_host_time(static_cast<uint64_t>(simgpu_config_value("nccl_launch_us") * 1000.0 + 0.5));
  std::vector<simgpu_external_desc> descs;
  for (const OpPlan& p : plans) descs.push_back(p.desc);
  std::vector<simgpu_op*> ops(plans.size());
  const cudaError_t e = simgpu_enqueue_external(stream, static_cast<int>(plans.size()), descs.data(), ops.data());
  {
    std::lock_guard<std::mutex> lk(g_mu);
    --g_launching;
    for (size_t i = 0; e == cudaSuccess && i < plans.size(); ++i) {
      plans[i].comm->in_flight++;
      g_pending.push_back(Pending{plans[i], ops[i]});
    }
  }
  if (e != cudaSuccess) return e;
  g_cv.notify_all();  // no syscall: the thread is awake, waiting for this push
  return cudaSuccess;
}

void drain(ncclComm* comm, bool abort) {
  std::unique_lock<std::mutex> lk(g_mu);
  if (abort) {
    for (auto it = g_pending.begin(); it != g_pending.end();) {
      if (it->plan.comm != comm) {
        ++it;
        continue;
      }
      // Work queued behind an aborted op must not hang: end it where it started.
      uint64_t start;
      if (simgpu_op_start(it->op, &start)) simgpu_op_complete(it->op, start, 0);
      simgpu_op_release(it->op);
      comm->in_flight--;
      it = g_pending.erase(it);
    }
    return;
  }
  g_cv.wait(lk, [comm] { return comm->in_flight == 0; });
}

bool exchange(ncclComm* comm, uint64_t value, std::vector<uint64_t>& values, std::string& error) {
  Channel ch = comm->seg.splits();
  uint64_t seq = comm->split_seq++;
  ch.post(seq, comm->rank, value);
  values.assign(comm->nranks, 0);
  auto deadline = std::chrono::steady_clock::now() + kJoinTimeout;
  while (!ch.gather(seq, values.data())) {
    if (std::chrono::steady_clock::now() > deadline) {
      error = "ncclCommSplit: not every rank of the parent communicator called it";
      return false;
    }
    std::this_thread::sleep_for(kPoll);
  }
  return true;
}

bool join(ncclComm* comm, const std::string& name, std::string& error) {
  if (!comm->seg.open(name, comm->nranks, error)) return false;
  comm->seg.joined().fetch_add(1);
  auto deadline = std::chrono::steady_clock::now() + kJoinTimeout;
  while (comm->seg.joined().load() < static_cast<uint32_t>(comm->nranks)) {
    if (std::chrono::steady_clock::now() > deadline) {
      error = "ncclCommInitRank: only " + std::to_string(comm->seg.joined().load()) + " of " +
              std::to_string(comm->nranks) + " ranks joined within 120 s";
      comm->seg.close();
      return false;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

void leave(ncclComm* comm) {
  if (comm->seg.left().fetch_add(1) + 1 == static_cast<uint32_t>(comm->nranks)) comm->seg.unlink();
  comm->seg.close();
}

}  // namespace simnccl
