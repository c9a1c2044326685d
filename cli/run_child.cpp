#include "run_child.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

namespace gpuwatch::cli {

std::vector<std::string> MergeEnvironment(char** base,
                                          const std::map<std::string, std::string>& set) {
  std::vector<std::string> env;
  for (char** e = base; e && *e; ++e) {
    const std::string kv = *e;
    const std::string name = kv.substr(0, kv.find('='));
    if (!set.count(name)) env.push_back(kv);
  }
  for (const auto& [k, v] : set) env.push_back(k + "=" + v);
  return env;
}

std::string PrependPreload(const std::string& lib, const char* existing) {
  if (!existing || !*existing) return lib;
  return lib + ":" + existing;
}

pid_t SpawnCommand(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                   const sigset_t& child_mask, std::string* error, int* exit_code) {
  // Everything the child needs is built before fork: after it, only async-signal-safe calls.
  std::vector<char*> av, ev;
  for (const auto& a : argv) av.push_back(const_cast<char*>(a.c_str()));
  av.push_back(nullptr);
  for (const auto& e : env) ev.push_back(const_cast<char*>(e.c_str()));
  ev.push_back(nullptr);
  // exec failures come back as an errno over a close-on-exec pipe: nothing read = it ran.
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    *exit_code = 125;
    return -1;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    *error = std::string("fork: ") + std::strerror(errno);
    *exit_code = 125;
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    close(fds[0]);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGPIPE, &dfl, nullptr);  // the collector ignores it; the command must not
    sigprocmask(SIG_SETMASK, &child_mask, nullptr);
    execvpe(av[0], av.data(), ev.data());
    const int err = errno;
    if (write(fds[1], &err, sizeof err) < 0) {
      // Nothing left to tell the parent with.
    }
    _exit(127);
  }
  close(fds[1]);
  int err = 0;
  ssize_t n;
  do {
    n = read(fds[0], &err, sizeof err);
  } while (n < 0 && errno == EINTR);
  close(fds[0]);
  if (n == static_cast<ssize_t>(sizeof err)) {
    waitpid(pid, nullptr, 0);
    *error = "cannot run " + argv[0] + ": " + std::strerror(err);
    *exit_code = (err == ENOENT || err == ENOTDIR) ? 127 : 126;
    return -1;
  }
  return pid;
}

int WaitForwardingSignals(pid_t pid) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  for (;;) {
    int status = 0;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) return 0;  // not our child any more: nothing to wait for
    // SIGCHLD is not waited for: polling waitpid every 50 ms costs nothing and needs no
    // handler, which a blocked, unhandled SIGCHLD would not give us anyway.
    siginfo_t info{};
    const timespec tick{0, 50 * 1000 * 1000};
    const int sig = sigtimedwait(&set, &info, &tick);
    if (sig <= 0) continue;
    // si_code <= 0: sent by a process (kill, killall, a batch system), to us alone.
    // SI_KERNEL: typed at the terminal, and the command had it too.
    if (info.si_code <= 0) kill(pid, sig);
  }
}

int ExitCodeOf(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

}  // namespace gpuwatch::cli
