// The one background thread: drains the rings, finishes collective timings, encodes
// protobuf batches and sends them to the collector. All formatting happens here, never on
// the application's threads.
#pragma once

namespace gpuwatch::inject {

// Starts the sender thread. Called by the first thread that records, or at load time in a
// program linked against the CUDA runtime (so that the thread's start does not land inside
// the application's first CUDA call). The thread connects to nobody before the first
// record. Returns false if it cannot start (the hooks then only forward).
bool StartSender();

// The first record of the process: right after the application's first CUDA call
// returned. Learns the device and registers the exit handler — after the CUDA runtime
// registered its own, so that ours runs first and events can still be queried.
void OnFirstRecord();

// From a signal handler that is about to let the process die: has the sender flush and
// say goodbye, waiting (async-signal-safely) at most `timeout_ms`. True when it finished.
bool FlushFromSignal(int timeout_ms);

// Flushes what was recorded and says goodbye to the collector, within
// GPUWATCH_EXIT_TIMEOUT_MS. Runs from atexit; safe to call twice.
void StopSender();

}  // namespace gpuwatch::inject
