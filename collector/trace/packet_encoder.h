// Hand encoding of the TracePackets the writer emits per event (slices, counters). Why not
// the generated classes: a slice is two packets of ~12 bytes, and building, clearing and
// serializing a protobuf message per packet was most of the trace's share of the
// collector's ingest time. The field numbers are those of proto/perfetto_trace.proto (which
// are Perfetto's); the validator (tests/unit/collector/test_trace_validator.h) parses every
// byte written here with the generated classes, so the .proto stays the one contract.
// Rare packets (track descriptors, instants) still use the generated classes.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "wire_encode.h"

namespace gpuwatch::collector::pkt {

// TracePacket
constexpr uint32_t kTimestamp = 8, kSequenceId = 10, kTrackEvent = 11, kInternedData = 12,
                   kSequenceFlags = 13, kClockSnapshot = 6, kClockId = 58, kDefaults = 59,
                   kFirstOnSequence = 87;
// TrackEvent
constexpr uint32_t kTeAnnotations = 4, kTeType = 9, kTeNameIid = 10, kTeTrackUuid = 11,
                   kTeCounterValue = 30, kTeFlowOld = 36, kTeTerminatingFlowOld = 42;
constexpr uint32_t kSliceBegin = 1, kSliceEnd = 2, kInstant = 3, kCounter = 4;
// InternedData: event_names 2, debug_annotation_names 3 (EventName/DebugAnnotationName:
// iid 1, name 2). DebugAnnotation: name_iid 1, bool 2, uint 3, double 5.
constexpr uint32_t kInternedNames = 2, kInternedKeys = 3;
// ClockSnapshot.clocks 1 {clock_id 1, timestamp 2, is_incremental 3}; builtin BOOTTIME is
// what timestamps without a clock id are read as; 64 is the first sequence-scoped id.
constexpr uint32_t kBootTime = 6, kIncrementalClock = 64;
constexpr uint32_t kFlagsCleared = 1;

using wire::enc::kLen;
using wire::enc::kVarint;
using wire::enc::Tag;
using wire::enc::Varint;

// Always written, zero included (a TrackEvent's timestamp delta is often 0).
inline void Field(std::string& o, uint32_t field, uint64_t v) {
  Tag(o, field, kVarint);
  Varint(o, v);
}
inline void Double(std::string& o, uint32_t field, double v) {
  Tag(o, field, static_cast<wire::enc::WireType>(1));  // 64-bit
  char b[8];
  std::memcpy(b, &v, 8);
  o.append(b, 8);
}
// A length-delimited field whose body is `body`.
inline void Nested(std::string& o, uint32_t field, std::string_view body) {
  Tag(o, field, kLen);
  Varint(o, body.size());
  o.append(body);
}
// An interned entry (EventName or DebugAnnotationName) into `interned`.
inline void InternedEntry(std::string& interned, uint32_t list_field, uint64_t iid,
                          std::string_view name, std::string& scratch) {
  scratch.clear();
  Field(scratch, 1, iid);
  Nested(scratch, 2, name);
  Nested(interned, list_field, scratch);
}

}  // namespace gpuwatch::collector::pkt
