// Hand encoding of the TracePackets the writer emits per event (slices, counters). Why not
// the generated classes: a slice is two packets of ~12 bytes, and building, clearing and
// serializing a protobuf message per packet was most of the trace's share of the
// collector's ingest time. The field numbers are those of proto/perfetto_trace.proto (which
// are Perfetto's); the validator (tests/unit/collector/test_trace_validator.h) parses every
// byte written here with the generated classes, so the .proto stays the one contract.
// Rare packets (track descriptors, instants) still use the generated classes.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "wire_encode.h"

namespace gpuwatch::collector::pkt {

// TracePacket
constexpr uint32_t kTimestamp = 8, kSequenceId = 10, kTrackEvent = 11, kInternedData = 12,
                   kSequenceFlags = 13, kClockSnapshot = 6, kClockId = 58, kDefaults = 59,
                   kTrackDescriptor = 60, kFirstOnSequence = 87;
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

// A packet being built: bytes appended in place, a varint written straight into its end.
// With std::string every field was an out-of-line append call (std::string::append was 10%
// of the collector's ingest on the every16 mix, beside 2% for the varints themselves);
// these inline into the field writers below.
class PacketBuf {
 public:
  void clear() { n_ = 0; }
  bool empty() const { return n_ == 0; }
  size_t size() const { return n_; }
  const char* data() const { return buf_.data(); }
  operator std::string_view() const { return {buf_.data(), n_}; }
  [[gnu::always_inline]] void append(const char* p, size_t k) {
    if (n_ + k > buf_.size()) Grow(n_ + k);
    std::memcpy(buf_.data() + n_, p, k);
    n_ += k;
  }
  [[gnu::always_inline]] void Varint(uint64_t v) {
    if (n_ + 10 > buf_.size()) Grow(n_ + 10);
    char* d = buf_.data() + n_;
    while (v >= 0x80) {
      *d++ = static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    *d++ = static_cast<char>(v);
    n_ = static_cast<size_t>(d - buf_.data());
  }

 private:
  [[gnu::noinline]] void Grow(size_t need) { buf_.resize(std::max(2 * buf_.size(), need)); }
  std::vector<char> buf_ = std::vector<char>(512);
  size_t n_ = 0;
};

[[gnu::always_inline]] inline void PutVarint(PacketBuf& o, uint64_t v) { o.Varint(v); }
inline void PutVarint(std::string& o, uint64_t v) { wire::enc::Varint(o, v); }

// Always written, zero included (a TrackEvent's timestamp delta is often 0).
template <class Out>
void Field(Out& o, uint32_t field, uint64_t v) {
  PutVarint(o, (uint64_t{field} << 3) | kVarint);
  PutVarint(o, v);
}
template <class Out>
void Double(Out& o, uint32_t field, double v) {
  PutVarint(o, (uint64_t{field} << 3) | 1);  // 64-bit
  char b[8];
  std::memcpy(b, &v, 8);
  o.append(b, 8);
}
// A length-delimited field whose body is `body`.
template <class Out>
void Nested(Out& o, uint32_t field, std::string_view body) {
  PutVarint(o, (uint64_t{field} << 3) | kLen);
  PutVarint(o, body.size());
  o.append(body.data(), body.size());
}
// An interned entry (EventName or DebugAnnotationName) into `interned`.
template <class Out>
void InternedEntry(Out& interned, uint32_t list_field, uint64_t iid, std::string_view name, Out& scratch) {
  scratch.clear();
  Field(scratch, 1, iid);
  Nested(scratch, 2, name);
  Nested(interned, list_field, scratch);
}

}  // namespace gpuwatch::collector::pkt
