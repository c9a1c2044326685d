#include "subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace gpuwatch::e2e {
namespace fs = std::filesystem;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string TestPreload() {
  const char* p = std::getenv("GPUWATCH_TEST_PRELOAD");
  return p && *p ? p : GPUWATCH_LIB;
}

std::string FreshDir(const std::string& name) {
  const fs::path d = fs::path(GPUWATCH_E2E_WORK) / name;
  // The collector of the previous run in this folder may still be writing its summary (it
  // finishes after the job): a file that vanishes under remove_all fails it, so try again.
  for (int attempt = 0;; ++attempt) {
    std::error_code ec;
    fs::remove_all(d, ec);
    if (!ec) break;
    if (attempt == 100) throw fs::filesystem_error("cannot empty the work folder", d, ec);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  fs::create_directories(d);
  return d.string();
}

std::vector<std::string> WaitForLog(const std::string& path, const std::regex& pattern,
                                    double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    std::smatch m;
    const std::string log = ReadFile(path);
    if (std::regex_search(log, m, pattern)) return {m.begin(), m.end()};
    if (std::chrono::steady_clock::now() >= deadline) return {};
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int LoggedTcpPort(const std::string& log_path) {
  static const std::regex re(R"(listening on TCP 127\.0\.0\.1:(\d+) )");
  const auto m = WaitForLog(log_path, re, 10);
  return m.empty() ? 0 : std::stoi(m[1]);
}

bool WaitForFile(const std::string& path, double timeout_s) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (!fs::exists(path)) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

namespace {

struct Spawned {
  std::vector<std::string> env_strings, args;
  std::vector<char*> envp, argp;
};

void Prepare(Spawned& sp, const std::vector<std::string>& argv, const std::map<std::string, std::string>& env) {
  std::map<std::string, std::string> merged;
  for (char** e = environ; *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq) merged[std::string(*e, static_cast<size_t>(eq - *e))] = eq + 1;
  }
  for (auto& [k, v] : env) {
    if (v.empty()) merged.erase(k); else merged[k] = v;
  }
  for (auto& [k, v] : merged) sp.env_strings.push_back(k + "=" + v);
  sp.args = argv;
  for (auto& e : sp.env_strings) sp.envp.push_back(e.data());
  sp.envp.push_back(nullptr);
  for (auto& a : sp.args) sp.argp.push_back(a.data());
  sp.argp.push_back(nullptr);
}

int SpawnFds(Spawned& sp, int out_fd, int err_fd) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
  posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, sp.argp[0], &fa, nullptr, sp.argp.data(), sp.envp.data());
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

}  // namespace

int Spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
          const std::string& log_path) {
  Spawned sp;
  Prepare(sp, argv, env);
  const int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int pid = SpawnFds(sp, fd, fd);
  close(fd);
  return pid;
}

namespace {

// Waits for pid until the deadline, then kills it. The wait status, or -1 when it was killed.
int Reap(int pid, double timeout_s) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int status = 0;
  for (;;) {
    if (waitpid(pid, &status, WNOHANG) == pid) return status;
    if (std::chrono::steady_clock::now() > until) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

int Wait(int pid, double timeout_s) {
  const int status = Reap(pid, timeout_s);
  return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

RunResult Run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
              double timeout_s) {
  Spawned sp;
  Prepare(sp, argv, env);
  char out_tmpl[] = "/tmp/gpuwatch-e2e-out-XXXXXX", err_tmpl[] = "/tmp/gpuwatch-e2e-err-XXXXXX";
  const int out_fd = mkstemp(out_tmpl), err_fd = mkstemp(err_tmpl);
  RunResult result;
  const int pid = SpawnFds(sp, out_fd, err_fd);
  if (pid < 0) {
    result.err = "spawn failed\n";
  } else {
    const int status = Reap(pid, timeout_s);
    if (status < 0) {
      result.err = "[e2e] killed at the deadline\n";
      result.signal = SIGKILL;
    }
    if (status >= 0 && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
    if (status >= 0 && WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  }
  close(out_fd);
  close(err_fd);
  result.out = ReadFile(out_tmpl);
  result.err += ReadFile(err_tmpl);
  unlink(out_tmpl);
  unlink(err_tmpl);
  return result;
}

}  // namespace gpuwatch::e2e
