// The command `gpuwatch run` watches: started with the environment that makes its CUDA
// processes report to our collector, waited for, and given the signals sent to us.
#pragma once
#include <signal.h>
#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace gpuwatch::cli {

// `base` (NAME=VALUE strings) with every variable of `set` added or replaced.
std::vector<std::string> MergeEnvironment(char** base, const std::map<std::string, std::string>& set);

// LD_PRELOAD for the command: `lib` first, then whatever `existing` preloads.
std::string PrependPreload(const std::string& lib, const char* existing);

// Starts argv[0] (searched in PATH) with `env`. In the child, the signal mask becomes
// `child_mask` and SIGPIPE its default again. Returns the pid, or -1 with `error` set and
// `exit_code` 127 (not found) or 126 (not executable), as a shell would.
pid_t SpawnCommand(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                   const sigset_t& child_mask, std::string* error, int* exit_code);

// Waits for `pid`. SIGINT and SIGTERM (which the caller has blocked in every thread) are
// forwarded to it when someone sent them to us; a terminal's Ctrl-C already went to the
// whole foreground process group, the command included, and is not sent twice.
// Returns the wait status.
int WaitForwardingSignals(pid_t pid);

// The status as an exit code: the command's, or 128 + the signal that killed it.
int ExitCodeOf(int wait_status);

}  // namespace gpuwatch::cli
