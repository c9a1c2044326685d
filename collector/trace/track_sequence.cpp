#include "trace/track_sequence.h"

#include <algorithm>

#include "common/time_shift.h"
#include "trace/packet_encoder.h"
#include "perfetto_trace.pb.h"

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

TrackSequence::State& TrackSequence::Head(TraceFile& file, TracePart part, uint64_t ts, PacketScratch& x) {
  using namespace pkt;
  State& st = parts_[file.detail_apart() && part == TracePart::kDetail ? 1 : 0];
  const uint32_t generation = file.generation(part);
  if (st.started && st.generation != generation) {
    // A new detail segment: nothing of the old one may be relied on (it may be deleted).
    st.started = false;
    st.names_defined.clear();
    st.keys_defined.clear();
  }
  file.NoteTime(part, ts);
  ts = ShiftNs(ts, file.options().test_clock_skew_ns);
  if (!st.started) {
    if (!st.seq) st.seq = ids_->next_sequence++;
    st.started = true;
    st.generation = generation;
    st.last_ts = ts;
    // The track's descriptor, on the packet that clears the sequence's state.
    pkt::PacketBuf& p = x.packet;
    p.clear();
    Field(p, kTimestamp, ts);
    Field(p, kSequenceId, st.seq);
    Field(p, kSequenceFlags, kFlagsCleared);
    Field(p, kFirstOnSequence, 1);
    Nested(p, kTrackDescriptor, descriptor_);
    file.AppendEncoded(p, 0, part);
    // TracePacketDefaults {timestamp_clock_id: 64, track_event_defaults {track_uuid}} and
    // ClockSnapshot {BOOTTIME = ts, clock 64 = ts, incremental}: from here on, this
    // sequence's timestamps are deltas on the same time line as every absolute one.
    p.clear();
    Field(p, kSequenceId, st.seq);
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
    file.AppendEncoded(p, 0, part);
  }
  ts = std::max(ts, st.last_ts);
  x.packet.clear();
  Field(x.packet, kTimestamp, ts - st.last_ts);
  Field(x.packet, kSequenceId, st.seq);
  st.last_ts = ts;
  x.event.clear();
  x.interned.clear();
  return st;
}

void TrackSequence::WriteSlice(TraceFile& file, TracePart part, const NameTable& names, const NameTable& keys,
                               const SliceSpec& s, PacketScratch& x) {
  using namespace pkt;
  if (part == TracePart::kDetail && !s.flow_in) file.AtDetailBoundary();
  State& st = Head(file, part, s.start, x);
  if (Define(st.names_defined, s.name_iid))
    InternedEntry(x.interned, kInternedNames, s.name_iid, names.Name(s.name_iid), x.entry);
  Field(x.event, kTeType, kSliceBegin);
  Field(x.event, kTeNameIid, s.name_iid);
  for (int i = 0; i < s.n_anns; ++i) {
    const Ann& a = s.anns[i];
    if (Define(st.keys_defined, a.key))
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
  file.AppendEncoded(x.packet, s.flow_out ? 512 : 64, part);  // room for the END (and the flow's end)

  Head(file, part, std::max(s.end, s.start), x);
  Field(x.event, kTeType, kSliceEnd);
  Nested(x.packet, kTrackEvent, x.event);
  file.AppendEncoded(x.packet, 0, part);
}

void TrackSequence::WriteCounter(TraceFile& file, int64_t value, uint64_t ts, PacketScratch& x) {
  using namespace pkt;
  Head(file, TracePart::kSummary, ts, x);
  Field(x.event, kTeType, kCounter);
  Field(x.event, kTeCounterValue, static_cast<uint64_t>(value));
  Nested(x.packet, kTrackEvent, x.event);
  file.AppendEncoded(x.packet);
}

std::string TrackDescriptorBytes(uint64_t uuid, uint64_t parent_uuid, const std::string& name, int32_t order,
                                 const char* counter_unit) {
  perfetto::protos::TrackDescriptor d;
  d.set_uuid(uuid);
  d.set_parent_uuid(parent_uuid);
  d.set_name(name);
  d.set_sibling_order_rank(order);
  if (counter_unit) d.mutable_counter()->set_unit_name(counter_unit);
  else d.set_sibling_merge_behavior(perfetto::protos::TrackDescriptor::SIBLING_MERGE_BEHAVIOR_NONE);
  return d.SerializeAsString();
}

}  // namespace gpuwatch::collector
