// The sender thread: every GPUWATCH_FLUSH_MS it has the assembler build a batch, adds a
// heartbeat once a second, and moves frames to the collector through the outbox; at exit
// (or a fatal signal) it flushes and says goodbye. Started by the process's first record.
#pragma once

namespace gpuwatch::inject {

// Starts the sender thread and sets the recorder running. Called by the first thread that
// records, or at load time in a program linked against the CUDA runtime (so that the
// thread's start does not land inside the application's first CUDA call). The thread
// connects to nobody before the first record. Returns false if it cannot start or
// GPUWATCH_DISABLE is set (the hooks then only forward).
bool StartSender();

// A thread's first record; acts on the process's first only: learns the device and
// registers the exit handler — after the CUDA runtime registered its own, so that ours
// runs first and events can still be queried.
void OnFirstRecord();

// From a signal handler that is about to let the process die: has the sender flush and
// say goodbye, waiting (async-signal-safely) at most `timeout_ms`. True when it finished.
bool FlushFromSignal(int timeout_ms);

// Flushes what was recorded and says goodbye to the collector, within
// GPUWATCH_EXIT_TIMEOUT_MS. Runs from atexit; safe to call twice.
void StopSender();

}  // namespace gpuwatch::inject
