// A trace a collector left in parts when it died (trace_file.h: OUT/trace-parts-PID/, the
// summary stream and the detail segments kept so far), put back into one file: each part is
// a whole trace up to its last complete packet, so their packets in order are one.
#pragma once
#include <string>

namespace gpuwatch::collector {

// Writes `into` (through a temporary name) from the newest OUT/trace-parts-*/ directory in
// `out_dir`: its summary stream, then its detail segments in order, each cut after its last
// whole packet. False (and `into` untouched) when there is none or nothing could be read;
// `note` then says why, else what was assembled.
bool AssembleTraceParts(const std::string& out_dir, const std::string& into, std::string* note);

}  // namespace gpuwatch::collector
