// Running the programs under test as a user would: a command line, extra environment,
// output captured to files, a deadline.
#pragma once
#include <map>
#include <regex>
#include <string>
#include <vector>

namespace gpuwatch::e2e {

struct RunResult {
  int exit_code = -1;   // -1: killed at the deadline or by a signal
  int signal = 0;
  std::string out;      // stdout
  std::string err;      // stderr
};

// Runs argv with the current environment plus `env` (an empty value removes the
// variable), stdin from /dev/null. Kills it after `timeout_s`.
RunResult Run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
              double timeout_s);

// Starts argv like Run() without waiting; stdout and stderr go to `log_path`.
int Spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
          const std::string& log_path);
// Waits for a Spawn()ed process; its exit code, or -1 if it was killed (by `timeout_s` too).
int Wait(int pid, double timeout_s);

// What the tests preload into the programs they run: the library they were built with
// (GPUWATCH_LIB), or $GPUWATCH_TEST_PRELOAD when set (scripts/sanitize_preload.sh: the ASan
// runtime, then the library built with ASan + UBSan).
std::string TestPreload();

// A fresh empty directory under the build tree's e2e work area.
std::string FreshDir(const std::string& name);

// Polls until `path` exists (true) or `timeout_s` passes (false).
bool WaitForFile(const std::string& path, double timeout_s);

std::string ReadFile(const std::string& path);

// Polls `path` (a log) for `pattern` for up to `timeout_s`: the first match and its
// groups, or nothing when it never appeared.
std::vector<std::string> WaitForLog(const std::string& path, const std::regex& pattern,
                                    double timeout_s);

// The port a collector logged ("listening on TCP 127.0.0.1:PORT"), 0 if it never did.
int LoggedTcpPort(const std::string& log_path);

}  // namespace gpuwatch::e2e
