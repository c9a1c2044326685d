// Deaths that skip atexit: SIGTERM (torchrun and schedulers stop workers with it), SIGINT,
// SIGHUP, SIGQUIT and SIGABRT (an uncaught C++ exception ends in abort()).
#pragma once

namespace gpuwatch::inject {

// For each of those signals the application left at its default action, gpuwatch flushes
// what was recorded to the collector or the spool, then restores the default and re-raises
// the signal, so the process dies exactly as it would have (same signal, same exit status,
// core if any). Signals the application handles itself are left alone: its handler
// decides, and a normal exit() runs gpuwatch's atexit flush.
void InstallExitSignalHandlers();

// One of those signals (async-signal-safe). runtime/self_end.cpp flushes for them too
// when the process sends one to itself at its default action.
bool IsExitSignal(int sig);

}  // namespace gpuwatch::inject
