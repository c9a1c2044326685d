// Helpers shared by the simulator's tests: stopwatch, tolerance, subprocesses, JSON files.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace simtest {

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// The promise: measured from outside, within 10% or 0.5 ms (whichever is larger).
inline double tolerance_ms(double expected_ms) { return std::max(0.1 * expected_ms, 0.5); }

struct Result {
  int status = -1;  // exit status, or 128+signal
  std::string out, err;
};

// Starts `argv` with `env` added to (or replacing in) this process's environment; stdout and
// stderr go to files so that several children can run at once without pipe deadlocks.
struct Child {
  int pid = -1;
  std::string out_path, err_path;
};
Child spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env);
Result wait(const Child& c);
inline Result run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env) {
  return wait(spawn(argv, env));
}

std::string make_temp_dir();
std::string read_file(const std::string& path);

// "key=value" lines printed by the helper programs.
std::map<std::string, double> parse_kv(const std::string& text);

}  // namespace simtest
