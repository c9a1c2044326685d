// One track of the trace written on a packet sequence of its own, which is what lets each
// event be small (docs/TRACE.md, "Size per event"):
//   - the sequence's first packet sets TracePacketDefaults (the track's uuid, and clock 64
//     as the timestamp clock) and a ClockSnapshot making clock 64 incremental from the first
//     timestamp: every later packet carries only the delta from the one before (2-4 bytes
//     instead of 9), and no track uuid;
//   - names and annotation keys are interned per sequence; their iids come from the rank's
//     NameTable, so a name has one iid on every sequence and is defined on each sequence
//     the first time that sequence uses it.
//   - the track's descriptor is the sequence's first packet, so wherever the sequence
//     starts (or starts over) its track is described.
// A track's slices of both parts (trace_file.h: summary and detail) are on this one
// sequence when the file keeps them together; when detail goes to segments of its own, the
// track has a second sequence for them, which starts over (state cleared, descriptor and
// names again) in each new segment.
// Deltas are unsigned, so a sequence's timestamps must not go backwards: a lane of slices
// (rank_trace.h) only takes a slice that starts at or after its last end, and counter
// windows are emitted in order. A timestamp that would go back is written as a 0 delta
// (never expected: the validator's nesting check, on absolute times, would see it).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trace/packet_encoder.h"
#include "trace/trace_file.h"

namespace gpuwatch::collector {

// Sequence ids and flow ids are unique across the whole trace (flows are matched
// trace-wide); small numbers keep their varints short.
struct TraceIds {
  uint32_t next_sequence = 1;
  uint64_t next_flow = 1;
};

// Interned strings of one rank: iid (1-based) <-> string, bounded.
class NameTable {
 public:
  explicit NameTable(size_t max_names) : max_(max_names) {}
  // Past the bound every new name maps to "(name table full)".
  uint32_t Iid(std::string_view name);
  const std::string& Name(uint32_t iid) const { return *names_[iid - 1]; }
  size_t size() const { return names_.size(); }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  size_t max_;
  // Looked up by string_view: no std::string (and no malloc) per event.
  std::unordered_map<std::string, uint32_t, Hash, std::equal_to<>> ids_;
  std::vector<const std::string*> names_;  // node keys: stable
};

// A debug annotation of a slice: key iid in the rank's key table.
struct Ann {
  uint32_t key;
  enum Type : uint8_t { kUint, kBool, kDouble } type;
  uint64_t u;
  double d;
};

struct SliceSpec {
  uint64_t start, end;
  uint32_t name_iid;
  const Ann* anns = nullptr;
  int n_anns = 0;
  uint64_t flow_out = 0, flow_in = 0;  // 0: none
};

// Encoding buffers shared by a rank's sequences (one packet is built at a time).
struct PacketScratch {
  pkt::PacketBuf packet, event, interned, entry;
};

class TrackSequence {
 public:
  // `descriptor`: the track's TrackDescriptor message (TrackDescriptorBytes below).
  TrackSequence(TraceIds* ids, uint64_t track_uuid, std::string descriptor)
      : ids_(ids), uuid_(track_uuid), descriptor_(std::move(descriptor)) {}

  // BEGIN and END of one slice (the BEGIN reserves room for its END and a flow's other end
  // below the file's hard cap, so the cap never leaves a slice open).
  void WriteSlice(TraceFile& file, TracePart part, const NameTable& names, const NameTable& keys,
                  const SliceSpec& s, PacketScratch& x);
  // Counters are summary-level.
  void WriteCounter(TraceFile& file, int64_t value, uint64_t ts, PacketScratch& x);

  // The sequence of the summary part (0 before its first packet).
  uint32_t sequence_id() const { return parts_[0].seq; }

 private:
  // One sequence's incremental state.
  struct State {
    uint32_t seq = 0;              // allocated at its first packet
    uint32_t generation = 0;       // of the stream it was started in
    bool started = false;
    uint64_t last_ts = 0;
    std::vector<bool> names_defined, keys_defined;  // by iid
  };
  // Starts the packet: the sequence's first packets (descriptor, defaults, clock snapshot)
  // are written before it when it starts or starts over, then the timestamp delta and the
  // sequence id. Returns the state the packet belongs to.
  State& Head(TraceFile& file, TracePart part, uint64_t ts, PacketScratch& x);
  static bool Define(std::vector<bool>& defined, uint32_t iid);

  TraceIds* ids_;
  uint64_t uuid_;
  std::string descriptor_;
  State parts_[2];  // by TracePart, when the file keeps detail apart; else [0] for both
};

// A TrackDescriptor message: `uuid` under `parent_uuid`, named, at `order` among its
// siblings, never merged with a sibling of the same name; `counter_unit` non-null: a
// counter track with that unit.
std::string TrackDescriptorBytes(uint64_t uuid, uint64_t parent_uuid, const std::string& name, int32_t order,
                                 const char* counter_unit = nullptr);

}  // namespace gpuwatch::collector
