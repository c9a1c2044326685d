// See launcher.h.
#include "launcher.h"

#include "host_fixture.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

extern char** environ;

namespace gpuwatch::scenario {
namespace {

using SteadyClock = std::chrono::steady_clock;

volatile std::sig_atomic_t g_stop_signal = 0;
void on_stop_signal(int sig) { g_stop_signal = sig; }

bool starts_with_key(const char* entry, const std::string& key) {
  return std::strncmp(entry, key.c_str(), key.size()) == 0 && entry[key.size()] == '=';
}

// The rank's environment: the parent's, unchanged (LD_PRELOAD included), except for the
// variables set here, which replace any inherited value.
// `host_root`: the recorded sysfs of gpu.numa_node ("": none).
std::vector<std::string> rank_environment(const Scenario& sc, const LaunchOptions& opt, int rank,
                                          const std::string& host_root) {
  EnvVars set = {
      {"RANK", std::to_string(rank)},
      {"LOCAL_RANK", std::to_string(rank)},  // one node: local rank = rank, as torchrun
      {"WORLD_SIZE", std::to_string(sc.ranks)},
      {"LOCAL_WORLD_SIZE", std::to_string(sc.ranks)},
  };
  for (auto& kv : sim_environment(sc, opt)) set.push_back(std::move(kv));
  if (!host_root.empty()) set.emplace_back("GPUWATCH_HOST_ROOT", host_root);
  if (auto it = opt.rank_env.find(rank); it != opt.rank_env.end()) {
    for (const auto& kv : it->second) {
      std::erase_if(set, [&](const auto& old) { return old.first == kv.first; });
      set.push_back(kv);
    }
  }
  return environment_with(set);
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    return "killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  return "status " + std::to_string(status);
}

struct Child {
  pid_t pid = -1;
  bool running = false;
  int status = 0;
};

}  // namespace

EnvVars sim_environment(const Scenario& sc, const LaunchOptions& opt) {
  EnvVars set;
  if (!opt.sim) return set;
  const char* old = std::getenv("LD_LIBRARY_PATH");
  set.emplace_back("LD_LIBRARY_PATH", opt.sim_dir + (old && *old ? std::string(":") + old : ""));
  // Whatever keys the `gpu` object has, numbers or not (a scenario with only `throttle`).
  if (std::string config = simgpu_config(sc); !config.empty()) set.emplace_back("SIMGPU_CONFIG", std::move(config));
  if (!opt.truth_dir.empty()) set.emplace_back("SIMGPU_TRUTH", opt.truth_dir);
  return set;
}

std::vector<std::string> environment_with(const EnvVars& set) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    bool replaced = false;
    for (const auto& kv : set) replaced = replaced || starts_with_key(*e, kv.first);
    if (!replaced) env.emplace_back(*e);
  }
  for (const auto& kv : set) env.push_back(kv.first + "=" + kv.second);
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

int launch_ranks(const Scenario& sc, const LaunchOptions& opt) {
  // Private directory for this run's rendezvous files: mkdtemp makes it 0700 and unique.
  const char* tmpdir = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/gpuwatch-scenario-XXXXXX";
  if (!mkdtemp(tmpl.data())) {
    std::fprintf(stderr, "gpuwatch-scenario: cannot create a temporary directory %s: %s\n", tmpl.c_str(), std::strerror(errno));
    return 1;
  }
  const std::string run_dir = tmpl;
  const std::string host_root = opt.sim ? write_host_fixture(sc, run_dir + "/host") : "";

  std::vector<std::string> args = {opt.rank_exe, "--run-dir", run_dir};
  if (!opt.truth_dir.empty()) {
    args.push_back("--truth");
    args.push_back(opt.truth_dir);
  }
  args.push_back(opt.scenario_path);

  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  const pid_t parent = getpid();
  std::vector<Child> children(size_t(sc.ranks));
  bool start_failed = false;
  for (int r = 0; r < sc.ranks; ++r) {
    // Everything the child needs is built before fork: the child only execs.
    std::vector<std::string> env = rank_environment(sc, opt, r, host_root);
    std::vector<std::string> argv_copy = args;
    std::vector<char*> envp = c_strings(env), argv = c_strings(argv_copy);
    pid_t pid = fork();
    if (pid < 0) {
      std::fprintf(stderr, "gpuwatch-scenario: fork failed: %s\n", std::strerror(errno));
      for (auto& c : children)
        if (c.running) kill(c.pid, SIGKILL);
      start_failed = true;
      break;
    }
    if (pid == 0) {
      // A rank must not outlive the driver (it could wait forever in a collective).
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);
      signal(SIGINT, SIG_DFL);
      signal(SIGTERM, SIG_DFL);
      execve(argv[0], argv.data(), envp.data());
      std::fprintf(stderr, "gpuwatch-scenario: cannot start %s: %s\n", argv[0], std::strerror(errno));
      _exit(127);
    }
    children[size_t(r)] = {pid, true, 0};
  }

  // Supervise: the first failure starts a grace period for the others (they may be
  // blocked in a collective with the dead rank), then SIGTERM, then SIGKILL.
  const auto started = SteadyClock::now();
  const auto never = SteadyClock::time_point::max();
  auto term_at = never, kill_at = never;
  bool any_failed = start_failed, terminated = false;
  std::vector<bool> stopped_by_us(children.size(), false);
  while (true) {
    bool any_running = false;
    for (size_t r = 0; r < children.size(); ++r) {
      Child& c = children[r];
      if (!c.running) continue;
      pid_t got = waitpid(c.pid, &c.status, WNOHANG);
      if (got == 0) {
        any_running = true;
        continue;
      }
      c.running = false;
      if (got < 0 || !(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0)) {
        if (stopped_by_us[r]) {
          std::fprintf(stderr, "gpuwatch-scenario: rank %zu stopped by the driver (%s)\n", r, describe_status(c.status).c_str());
        } else {
          std::fprintf(stderr, "gpuwatch-scenario: rank %zu failed: %s\n", r, describe_status(c.status).c_str());
        }
        if (!any_failed) term_at = SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(opt.grace_s));
        any_failed = true;
      }
    }
    if (!any_running) break;

    const auto now = SteadyClock::now();
    if (g_stop_signal && term_at > now) {
      std::fprintf(stderr, "gpuwatch-scenario: signal %d, stopping the ranks\n", int(g_stop_signal));
      any_failed = true;
      term_at = now;
    }
    if (opt.timeout_s > 0 && now - started > std::chrono::duration<double>(opt.timeout_s) && term_at > now) {
      std::fprintf(stderr, "gpuwatch-scenario: timed out after %g s; stopping the ranks still running\n", opt.timeout_s);
      any_failed = true;
      term_at = now;
    }
    if (now >= term_at && !terminated) {
      terminated = true;
      for (size_t r = 0; r < children.size(); ++r)
        if (children[r].running) {
          stopped_by_us[r] = true;
          kill(children[r].pid, SIGTERM);
        }
      kill_at = now + std::chrono::seconds(1);
    }
    if (now >= kill_at) {
      for (auto& c : children)
        if (c.running) kill(c.pid, SIGKILL);
      kill_at = never;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }

  std::error_code ec;
  std::filesystem::remove_all(run_dir, ec);
  return any_failed ? 1 : 0;
}

}  // namespace gpuwatch::scenario
