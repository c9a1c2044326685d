// The rank's own stopwatch: per-op totals written to truth-rank-R.json.
//
// Plain C++ (no CUDA) so the unit tests can check the file layout. What each key covers is
// decided by the player (rank_player.cpp) and documented in docs/scenarios.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace gpuwatch::scenario {

using Clock = std::chrono::steady_clock;  // CLOCK_MONOTONIC on Linux, as the profiler uses

inline double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

class TruthRecorder {
 public:
  struct Entry {
    std::uint64_t count = 0;
    std::uint64_t bytes = 0;
    double total_s = 0;
    // Of total_s, the calls during which the scheduler took the thread away (involuntary
    // context switches): that time may fall outside what the hook times.
    double preempted_s = 0;
  };

  void add(const std::string& op, double seconds, std::uint64_t bytes = 0, std::uint64_t count = 1,
           bool preempted = false) {
    Entry& e = ops_[op];
    e.count += count;
    e.bytes += bytes;
    e.total_s += seconds;
    if (preempted) e.preempted_s += seconds;
  }
  // Kernels launched with a grid of `blocks` blocks (the `kernels` op): "kernel_blocks".
  void add_blocks(std::uint64_t blocks, std::uint64_t count) { blocks_[blocks] += count; }
  // Top-level numbers besides "ops" (wall_s, setup_s, ...).
  void set(const std::string& key, nlohmann::json value) { extra_[key] = std::move(value); }

  const std::map<std::string, Entry>& ops() const { return ops_; }
  nlohmann::json to_json(int rank) const;
  // Writes DIR/truth-rank-R.json (tmp file + rename, so readers never see half a file).
  void write(const std::string& dir, int rank) const;

 private:
  std::map<std::string, Entry> ops_;
  std::map<std::uint64_t, std::uint64_t> blocks_;
  nlohmann::json extra_ = nlohmann::json::object();
};

}  // namespace gpuwatch::scenario
