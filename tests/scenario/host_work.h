// What a `host` op does while its time passes (docs/scenarios.md, key `wait`):
//   sleep  (default) almost no CPU: the host is busy elsewhere (Python, a queue);
//   cpu    a CPU-bound input pipeline: a loader thread of the rank busy until the deadline
//          while the training thread waits for its batch (a condition variable: a futex),
//          as a DataLoader's workers and the loop waiting on their queue;
//   read   blocked in read() on a pipe that a feeder thread fills at `read_mbps`: a
//          pipeline waiting on storage or the network, using almost no CPU.
// Each returns at or shortly after the deadline, never before.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "truth.h"

namespace gpuwatch::scenario {

void host_sleep(Clock::time_point deadline);

// How late this process wakes while the rank plays (with --truth): a thread asleep but for
// a wake-up every 4 ms, each an absolute-deadline clock_nanosleep as host_sleep's, timed
// against its deadline. The reference scenario-truth-check holds the host ops' time past
// their deadlines against (truth's wake_late_s): the same process, the same cores, the same
// moment, its own simulator threads included. Costs a wake-up every 4 ms.
class WakeUpProbe {
 public:
  WakeUpProbe() = default;
  WakeUpProbe(const WakeUpProbe&) = delete;
  WakeUpProbe& operator=(const WakeUpProbe&) = delete;
  ~WakeUpProbe() { stop(); }
  void start();
  void stop();
  double mean_late_s() const { return wakes_ ? late_s_ / static_cast<double>(wakes_) : 0.0; }  // after stop()
  std::uint64_t wakes() const { return wakes_; }

 private:
  std::atomic<bool> stop_{false};
  double late_s_ = 0;
  std::uint64_t wakes_ = 0;
  std::thread thread_;
};

// One loader thread, started at the first cpu op of the rank.
class LoaderWorker {
 public:
  LoaderWorker() = default;
  LoaderWorker(const LoaderWorker&) = delete;
  LoaderWorker& operator=(const LoaderWorker&) = delete;
  ~LoaderWorker();
  // The loader busy until the deadline; the caller blocked until it is done.
  void load_until(Clock::time_point deadline);

 private:
  void work();

  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool job_ = false;
  Clock::time_point deadline_;
};

// One pipe and one feeder thread, started at the first read op of the rank.
class ReadFeeder {
 public:
  ReadFeeder() = default;
  ReadFeeder(const ReadFeeder&) = delete;
  ReadFeeder& operator=(const ReadFeeder&) = delete;
  ~ReadFeeder();
  // Blocks in read() until the deadline, while the feeder writes one chunk every
  // millisecond (the last one at the deadline), `mbps` x 1e6 bytes per second in all.
  // Returns the bytes read. Throws std::runtime_error when the pipe cannot be made.
  std::uint64_t read_until(Clock::time_point deadline, double mbps);

 private:
  void feed();

  int fds_[2] = {-1, -1};
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool job_ = false;
  Clock::time_point start_, deadline_;
  std::uint64_t chunks_ = 0, chunk_bytes_ = 0;
};

}  // namespace gpuwatch::scenario
