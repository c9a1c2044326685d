// Chosen ranks' traces merged into one Perfetto file on one timeline (issue #21: traces stay
// on the host collectors; `gpuwatch report --ranks` puts the ranks a user wants side by side).
//
// Perfetto accepts concatenated traces, provided nothing in them collides. The files come
// from different collectors, each numbering its own packet sequences, track uuids, flows and
// process ids from the same small numbers, and each on its own host's clock. So every packet
// of a chosen rank is copied field by field (TracePacket level, like the writer's
// packet_encoder.h: no message object per packet) with
//   - trusted_packet_sequence_id renumbered per input (a map of a few ids per rank);
//   - track uuids (descriptors, parents, events, sequence defaults) and flow ids spread as
//     id * inputs + input: distinct across inputs, the same within one, no table;
//   - process ids kept unless another input already used one, then renumbered;
//   - absolute times (timestamps on the trace clock, ClockSnapshot values) moved by the
//     rank's clock offset; incremental deltas are relative, so they are left alone.
// A packet belongs to the rank whose process track its track descends from (the process
// track is named "rank R · host · pid P"); its sequence belongs to that rank from then on.
// Packets of ranks not chosen are skipped. Memory: the per-input tables above, and one
// packet at a time: the inputs are streamed, however big.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace gpuwatch::collector {

struct MergeInput {
  std::string path;                  // a trace.perfetto-trace written by a collector
  std::map<int, int64_t> offset_ns;  // rank -> its clock offset onto the merged timeline
  bool every_rank = false;           // and every other rank in it, not moved
};

struct MergeStats {
  uint64_t packets_read = 0, packets_written = 0, bytes_written = 0;
  std::map<int, uint64_t> packets_by_rank;  // the chosen ranks found, and their packets
  bool truncated = false;                   // an input ended inside a packet (collector killed)
};

// Writes the chosen ranks of `inputs` to `out_path`. False with `error` (one line) when an
// input cannot be read or the output cannot be written.
bool MergeTraces(const std::vector<MergeInput>& inputs, const std::string& out_path,
                 MergeStats* stats, std::string* error);

}  // namespace gpuwatch::collector
