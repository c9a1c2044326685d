// One track of the trace written on a packet sequence of its own, which is what lets each
// event be small (docs/TRACE.md, "Size per event"):
//   - the sequence's first packet sets TracePacketDefaults (the track's uuid, and clock 64
//     as the timestamp clock) and a ClockSnapshot making clock 64 incremental from the first
//     timestamp: every later packet carries only the delta from the one before (2-4 bytes
//     instead of 9), and no track uuid;
//   - names and annotation keys are interned per sequence; their iids come from the rank's
//     NameTable, so a name has one iid on every sequence and is defined on each sequence
//     the first time that sequence uses it.
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
  TrackSequence(uint32_t sequence_id, uint64_t track_uuid)
      : seq_(sequence_id), uuid_(track_uuid) {}

  // BEGIN and END of one slice (the BEGIN reserves room for its END and a flow's other end
  // below the file's hard cap, so the cap never leaves a slice open).
  void WriteSlice(TraceFile& file, const NameTable& names, const NameTable& keys,
                  const SliceSpec& s, PacketScratch& x);
  void WriteCounter(TraceFile& file, int64_t value, uint64_t ts, PacketScratch& x);

  uint32_t sequence_id() const { return seq_; }

 private:
  // Starts the packet: the sequence's first packet is written before it if needed, then the
  // timestamp delta and the sequence id.
  void Head(TraceFile& file, uint64_t ts, PacketScratch& x);
  bool Define(std::vector<bool>& defined, uint32_t iid);

  uint32_t seq_;
  uint64_t uuid_;
  bool started_ = false;
  uint64_t last_ts_ = 0;
  std::vector<bool> names_defined_, keys_defined_;  // by iid
};

}  // namespace gpuwatch::collector
