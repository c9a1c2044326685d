#include "host_work.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpuwatch::scenario {
namespace {

void sleep_until(Clock::time_point t) {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  timespec ts{time_t(ns / 1000000000), long(ns % 1000000000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

}  // namespace

// Host work that does not burn a CPU: the ranks of a scenario share few cores with the
// simulator's threads, so a busy wait would distort everyone's timing. An absolute-deadline
// clock_nanosleep on CLOCK_MONOTONIC (steady_clock's clock, 1 ns timer slack): never early,
// late by a wake-up (60-160 us on average on the 2-core VM beside three builds, truth's
// wake_late_s). It used to sleep until 250 us before the deadline and sched_yield until it:
// on an idle machine within microseconds, but on a loaded one each yield handed the core to
// another runnable thread for its slice, and the ops ended 2-3 ms late on average
// (pipeline_bubble's 0.5 ms ops, link_bandwidth's 1 ms) against the same process's wake-ups
// 60-160 us late. Not a spin either: the thread's own code running would be what a C++ job's
// host-frame samples (CPU-time timers) name as host work, not the wait for data a sleep
// stands for (a plain spin made dataloader_bound host_overhead).
void host_sleep(Clock::time_point deadline) {
  if (Clock::now() < deadline) sleep_until(deadline);
}

void WakeUpProbe::start() {
  thread_ = std::thread([this] {
    while (!stop_) {
      const auto deadline = Clock::now() + std::chrono::milliseconds(4);
      sleep_until(deadline);
      late_s_ += seconds_between(deadline, Clock::now());
      ++wakes_;
    }
  });
}

void WakeUpProbe::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

// A CPU-bound pipeline: the loader is runnable the whole time, on a core or waiting for one,
// and ends at the deadline whatever share of a core it got. sched_yield in the loop lets
// the simulator's and the other ranks' threads run as soon as they wake: a bare busy loop
// delays their launches and collectives on a machine with few cores, which would show up as
// other losses than data loading. The training thread waits on a condition variable, as a
// loop waits on a DataLoader's queue: its host frames say it was blocked on a producer.
LoaderWorker::~LoaderWorker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void LoaderWorker::work() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || job_; });
    if (stop_) return;
    const auto deadline = deadline_;
    lock.unlock();
    while (Clock::now() < deadline) sched_yield();
    lock.lock();
    job_ = false;
    cv_.notify_all();
  }
}

void LoaderWorker::load_until(Clock::time_point deadline) {
  if (!thread_.joinable()) thread_ = std::thread([this] { work(); });
  std::unique_lock<std::mutex> lock(mu_);
  deadline_ = deadline;
  job_ = true;
  cv_.notify_all();
  cv_.wait(lock, [&] { return !job_; });
}

ReadFeeder::~ReadFeeder() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  for (int fd : fds_)
    if (fd >= 0) close(fd);
}

void ReadFeeder::feed() {
  std::vector<char> buf;
  for (;;) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return stop_ || job_; });
    if (stop_) return;
    const auto start = start_, deadline = deadline_;
    const std::uint64_t n = chunks_, size = chunk_bytes_;
    lock.unlock();
    buf.assign(size, 'x');
    for (std::uint64_t i = 1; i <= n; ++i) {
      sleep_until(start + std::chrono::duration_cast<Clock::duration>((deadline - start) * (static_cast<double>(i) / n)));
      for (std::uint64_t off = 0; off < size;) {
        const ssize_t w = write(fds_[1], buf.data() + off, size - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;  // the reader is gone
        off += static_cast<std::uint64_t>(w);
      }
    }
    lock.lock();
    job_ = false;
    cv_.notify_all();
  }
}

std::uint64_t ReadFeeder::read_until(Clock::time_point deadline, double mbps) {
  if (fds_[0] < 0) {
    if (pipe2(fds_, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
    fcntl(fds_[1], F_SETPIPE_SZ, 1 << 20);  // fewer partial writes at high rates; best effort
    thread_ = std::thread([this] { feed(); });
  }
  const auto start = Clock::now();
  if (deadline <= start) return 0;
  const double seconds = std::chrono::duration<double>(deadline - start).count();
  const std::uint64_t chunks = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(seconds * 1e3));
  const std::uint64_t size = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(mbps * 1e6 * seconds / chunks));
  {
    std::lock_guard<std::mutex> lock(mu_);
    start_ = start;
    deadline_ = deadline;
    chunks_ = chunks;
    chunk_bytes_ = size;
    job_ = true;
  }
  cv_.notify_all();
  std::vector<char> buf(1 << 16);
  std::uint64_t got = 0;
  while (got < chunks * size) {
    const ssize_t r = read(fds_[0], buf.data(), buf.size());
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) throw std::runtime_error("read from the feeder pipe failed");
    got += static_cast<std::uint64_t>(r);
  }
  // The feeder marks itself idle after its last write; wait for that (microseconds).
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::milliseconds(50), [&] { return !job_; });
  return got;
}

}  // namespace gpuwatch::scenario
