// The fatal-signal handler: flush (bounded), then die of the same signal.
#include "runtime/signals.h"

#include <pthread.h>
#include <signal.h>

#include "record/recorder.h"
#include "runtime/config.h"
#include "runtime/sender.h"

namespace gpuwatch::inject {
namespace {

constexpr int kSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGABRT};

void OnFatalSignal(int sig) {
  // A forked child is silent; anyone else flushes (bounded) before dying.
  if (g_state.load(std::memory_order_acquire) == static_cast<int>(State::kRunning)) {
    FlushFromSignal(GetConfig().exit_timeout_ms);
  }
  signal(sig, SIG_DFL);
  // Pending until this handler returns, then the default action runs. pthread_kill, which
  // raise() is, rather than raise(): the library wraps raise (self_end.cpp) to flush, done.
  pthread_kill(pthread_self(), sig);
}

}  // namespace

bool IsExitSignal(int sig) {
  for (int s : kSignals)
    if (s == sig) return true;
  return false;
}

void InstallExitSignalHandlers() {
  for (int sig : kSignals) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO)) continue;
    struct sigaction sa {};
    sa.sa_handler = OnFatalSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(sig, &sa, nullptr);
  }
}

}  // namespace gpuwatch::inject
