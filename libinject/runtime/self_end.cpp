// A process that ends itself past atexit. By _exit()/_Exit() (Python's os._exit), or by
// kill(getpid(), SIG) or raise(SIG) with the signal at its
// default action, which ends the process without atexit, and past the handler signals.cpp
// installs at the first CUDA call if the action was set back to the default since. CPython
// does exactly that on an uncaught KeyboardInterrupt (Modules/main.c, exit_sigint: SIGINT
// back to SIG_DFL, then kill(getpid(), SIGINT)), after its own handler had been there all
// along. So these wrappers flush what was recorded (bounded by GPUWATCH_EXIT_TIMEOUT_MS,
// as the signal handler does) before the real call delivers the signal: the job dies of it
// as it would have, and its rank ends as a normal end (docs/RELIABILITY.md).
//
// Part of libgpuwatch.so itself, not the archive (CMakeLists.txt): exported symbols of the
// archive are hidden by --exclude-libs.
#include <dlfcn.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "record/recorder.h"
#include "runtime/config.h"
#include "runtime/sender.h"
#include "runtime/signals.h"

namespace gpuwatch::inject {
namespace {

// `sig` will end the process when delivered now: one of the exit signals gpuwatch flushes
// for, at its default action. Async-signal-safe (kill and raise may be called from the
// job's own handler, as in "restore the default and raise again").
void FlushIfDying(int sig) {
  if (!IsExitSignal(sig) || g_state.load(std::memory_order_acquire) != static_cast<int>(State::kRunning)) return;
  struct sigaction now {};
  if (sigaction(sig, nullptr, &now) != 0 || (now.sa_flags & SA_SIGINFO) || now.sa_handler != SIG_DFL) return;
  FlushFromSignal(GetConfig().exit_timeout_ms);
}

// The real functions, looked up at load: kill and raise are called from signal handlers,
// where dlsym is not safe. (Only a call before the library's constructor looks them up then.)
using KillFn = int (*)(pid_t, int);
using RaiseFn = int (*)(int);
using ExitFn = void (*)(int);
constinit KillFn g_kill = nullptr;
constinit RaiseFn g_raise = nullptr;
constinit ExitFn g_exit = nullptr, g_exit_c99 = nullptr;

__attribute__((constructor)) void FindRealSignalFunctions() {
  g_kill = reinterpret_cast<KillFn>(dlsym(RTLD_NEXT, "kill"));
  g_raise = reinterpret_cast<RaiseFn>(dlsym(RTLD_NEXT, "raise"));
  g_exit = reinterpret_cast<ExitFn>(dlsym(RTLD_NEXT, "_exit"));
  g_exit_c99 = reinterpret_cast<ExitFn>(dlsym(RTLD_NEXT, "_Exit"));
}

// _exit is async-signal-safe and called from handlers and vfork()ed children:
// FlushFromSignal is too, and leaves a vfork child's parent alone.
[[noreturn]] void ExitNow(const ExitFn& real, int status) {
  if (g_state.load(std::memory_order_acquire) == static_cast<int>(State::kRunning))
    FlushFromSignal(GetConfig().exit_timeout_ms);
  if (!real) FindRealSignalFunctions();  // called before the library's constructor
  if (real) real(status);
  syscall(SYS_exit_group, status);  // no real _exit found: the system call itself
  __builtin_unreachable();
}

KillFn RealKill() {
  if (!g_kill) FindRealSignalFunctions();
  return g_kill;
}

RaiseFn RealRaise() {
  if (!g_raise) FindRealSignalFunctions();
  return g_raise;
}

}  // namespace
}  // namespace gpuwatch::inject

extern "C" {

__attribute__((visibility("default"))) int kill(pid_t pid, int sig) {
  if (pid == getpid() || pid == 0) gpuwatch::inject::FlushIfDying(sig);  // 0: its group, itself among them
  return gpuwatch::inject::RealKill()(pid, sig);
}

__attribute__((visibility("default"))) int raise(int sig) {
  gpuwatch::inject::FlushIfDying(sig);
  return gpuwatch::inject::RealRaise()(sig);
}

__attribute__((visibility("default"), noreturn)) void _exit(int status) {
  gpuwatch::inject::ExitNow(gpuwatch::inject::g_exit, status);
}

__attribute__((visibility("default"), noreturn)) void _Exit(int status) {
  gpuwatch::inject::ExitNow(gpuwatch::inject::g_exit_c99, status);
}

}  // extern "C"
