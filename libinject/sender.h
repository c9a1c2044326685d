// The one background thread: drains the rings, finishes collective timings, encodes
// protobuf batches and sends them to the collector. All formatting happens here, never on
// the application's threads.
#pragma once

namespace gpuwatch::inject {

// Starts recording: the sender thread and the exit handler. Called once, by the first
// thread that records, right after its first CUDA call returned. Returns false if
// recording cannot start (the hooks then only forward).
bool StartSender();

// Flushes what was recorded and says goodbye to the collector, within
// GPUWATCH_EXIT_TIMEOUT_MS. Runs from atexit; safe to call twice.
void StopSender();

}  // namespace gpuwatch::inject
