// Reads a Chrome-trace JSON document as a stream (nlohmann-json's SAX interface): each
// element of traceEvents is handed over as a TraceEvent when its object closes, and the
// header (distributedInfo, deviceProperties, host_name) is collected wherever it appears.
// Memory is one event at a time; nesting below what the mapping reads is skipped.
// Both layouts are read: {"traceEvents": [...], ...} and a bare array of events.
#pragma once
#include <functional>
#include <istream>
#include <string>

#include "import/trace_event.h"

namespace gpuwatch::collector {

using TraceEventFn = std::function<void(const TraceEvent&)>;

// False with `error` (one line) when the input is not JSON or not a Chrome trace; events
// read before a syntax error have been handed over already.
bool ReadChromeTrace(std::istream& in, const TraceEventFn& on_event, TraceHeader* header, std::string* error);

}  // namespace gpuwatch::collector
