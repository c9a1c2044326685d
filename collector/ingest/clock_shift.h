// Moving a rank's frames from its host's clock onto another one (multi-host, --upstream).
// Every time a rank sends is CLOCK_MONOTONIC of its host; a root collector adds the
// forwarding collector's estimate of (root clock - host clock) to all of them at ingest,
// so ranks of every host share one timeline in the aggregates and the trace. This is the
// only place that knows which fields are times: a field added to gpuwatch.proto that
// holds a time must be added here (the unit test lists them too).
#pragma once
#include <cstdint>

#include "common/time_shift.h"  // ShiftNs
#include "gpuwatch.pb.h"

namespace gpuwatch::collector {

// Hello.start_ns.
void ShiftHello(wire::Hello& hello, int64_t delta);

// Shifts every timestamp of `frame` by `delta` ns: Hello.start_ns; Batch events' t_ns,
// activities' start/end, proc samples' t_ns; Goodbye.end_ns; Heartbeat.now_ns and its
// in-flight calls' since_ns; a RankDigest's shift_ns
// (its times are applied when decoded, analyze/rank_digest.h). Durations are left alone. ClockProbes are not rank times and
// are left alone too.
void ShiftFrame(wire::Frame& frame, int64_t delta);

}  // namespace gpuwatch::collector
