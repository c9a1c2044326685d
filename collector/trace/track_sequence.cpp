#include "trace/track_sequence.h"

#include <algorithm>

#include "common/time_shift.h"
#include "trace/packet_encoder.h"

namespace gpuwatch::collector {

uint32_t NameTable::Iid(std::string_view name) {
  auto it = ids_.find(name);
  if (it != ids_.end()) return it->second;
  if (names_.size() >= max_) {
    name = "(name table full)";
    it = ids_.find(name);
    if (it != ids_.end()) return it->second;
  }
  it = ids_.emplace(std::string(name), static_cast<uint32_t>(names_.size() + 1)).first;
  names_.push_back(&it->first);
  return it->second;
}

bool TrackSequence::Define(std::vector<bool>& defined, uint32_t iid) {
  if (iid < defined.size() && defined[iid]) return false;
  if (iid >= defined.size()) defined.resize(iid + 1 + defined.size() / 2);
  defined[iid] = true;
  return true;
}

void TrackSequence::Head(TraceFile& file, uint64_t ts, PacketScratch& x) {
  using namespace pkt;
  ts = ShiftNs(ts, file.options().test_clock_skew_ns);
  if (!started_) {
    // TracePacketDefaults {timestamp_clock_id: 64, track_event_defaults {track_uuid}} and
    // ClockSnapshot {BOOTTIME = ts, clock 64 = ts, incremental}: from here on, this
    // sequence's timestamps are deltas on the same time line as every absolute one.
    started_ = true;
    last_ts_ = ts;
    pkt::PacketBuf& p = x.packet;
    p.clear();
    Field(p, kSequenceId, seq_);
    Field(p, kSequenceFlags, kFlagsCleared);
    Field(p, kFirstOnSequence, 1);
    x.event.clear();
    Field(x.event, kTeTrackUuid, uuid_);
    x.entry.clear();
    Field(x.entry, kClockId, kIncrementalClock);
    Nested(x.entry, kTrackEvent, x.event);
    Nested(p, kDefaults, x.entry);
    x.interned.clear();
    x.entry.clear();
    Field(x.entry, 1, kBootTime);
    Field(x.entry, 2, ts);
    Nested(x.interned, 1, x.entry);
    x.entry.clear();
    Field(x.entry, 1, kIncrementalClock);
    Field(x.entry, 2, ts);
    Field(x.entry, 3, 1);
    Nested(x.interned, 1, x.entry);
    Nested(p, kClockSnapshot, x.interned);
    file.AppendEncoded(p);
  }
  ts = std::max(ts, last_ts_);
  x.packet.clear();
  Field(x.packet, kTimestamp, ts - last_ts_);
  Field(x.packet, kSequenceId, seq_);
  last_ts_ = ts;
  x.event.clear();
  x.interned.clear();
}

void TrackSequence::WriteSlice(TraceFile& file, const NameTable& names, const NameTable& keys,
                               const SliceSpec& s, PacketScratch& x) {
  using namespace pkt;
  Head(file, s.start, x);
  if (Define(names_defined_, s.name_iid))
    InternedEntry(x.interned, kInternedNames, s.name_iid, names.Name(s.name_iid), x.entry);
  Field(x.event, kTeType, kSliceBegin);
  Field(x.event, kTeNameIid, s.name_iid);
  for (int i = 0; i < s.n_anns; ++i) {
    const Ann& a = s.anns[i];
    if (Define(keys_defined_, a.key))
      InternedEntry(x.interned, kInternedKeys, a.key, keys.Name(a.key), x.entry);
    x.entry.clear();
    Field(x.entry, 1, a.key);
    switch (a.type) {
      case Ann::kUint: Field(x.entry, 3, a.u); break;
      case Ann::kBool: Field(x.entry, 2, a.u != 0); break;
      case Ann::kDouble: Double(x.entry, 5, a.d); break;
    }
    Nested(x.event, kTeAnnotations, x.entry);
  }
  if (s.flow_out) Field(x.event, kTeFlowOld, s.flow_out);
  if (s.flow_in) Field(x.event, kTeTerminatingFlowOld, s.flow_in);
  if (!x.interned.empty()) Nested(x.packet, kInternedData, x.interned);
  Nested(x.packet, kTrackEvent, x.event);
  file.AppendEncoded(x.packet, s.flow_out ? 512 : 64);  // room for the END (and the flow's end)

  Head(file, std::max(s.end, s.start), x);
  Field(x.event, kTeType, kSliceEnd);
  Nested(x.packet, kTrackEvent, x.event);
  file.AppendEncoded(x.packet);
}

void TrackSequence::WriteCounter(TraceFile& file, int64_t value, uint64_t ts, PacketScratch& x) {
  using namespace pkt;
  Head(file, ts, x);
  Field(x.event, kTeType, kCounter);
  Field(x.event, kTeCounterValue, static_cast<uint64_t>(value));
  Nested(x.packet, kTrackEvent, x.event);
  file.AppendEncoded(x.packet);
}

}  // namespace gpuwatch::collector
