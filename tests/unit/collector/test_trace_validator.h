// A validator for gpuwatch's Perfetto traces, independent of the writer: it decodes the file
// with the generated perfetto subset classes (proto/perfetto_trace.proto) and checks the
// rules ui.perfetto.dev relies on (field-facts.md, "Perfetto native trace format"):
//   - the file is a sequence of Trace.packet records (a cut-off last one is allowed when
//     `truncated`);
//   - every TrackEvent packet has a trusted_packet_sequence_id and a timestamp;
//   - the first packet of a sequence clears incremental state (flags 1|2); interned ids are
//     defined (same or earlier packet of that sequence) before they are used, by packets
//     flagged SEQ_NEEDS_INCREMENTAL_STATE;
//   - every track an event names, and every parent, was described before;
//   - slices on each track nest (each END closes the latest BEGIN of its track in file
//     order; the resulting intervals are disjoint or contained);
//   - every flow that starts also ends (and every end has a start);
//   - every process is a rank ("rank R · host · pid P").
// It also counts what the trace holds per process, to compare with summary.json.
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "perfetto_trace.pb.h"

namespace gwtrace {

struct RankCounts {
  uint64_t kernels = 0, gpu_h2d = 0, gpu_d2h = 0, memsets = 0, launches = 0;
  uint64_t host_h2d = 0, host_d2h = 0, syncs = 0, api = 0, counters = 0, instants = 0;
  std::map<std::string, uint64_t> collectives;  // "allreduce" -> count
  // Earliest and latest timestamp of the process's track events (one timeline for every
  // rank, multi-host included).
  uint64_t first_ns = UINT64_MAX, last_ns = 0;
};

struct TraceReport {
  std::vector<std::string> errors;
  uint64_t bytes = 0, packets = 0, track_events = 0, slices = 0, flows = 0;
  uint64_t counter_events = 0, instants = 0, descriptors = 0;
  std::map<std::string, RankCounts> processes;  // process name -> counts
  std::string First() const { return errors.empty() ? "" : errors.front(); }
};

namespace detail {

inline bool ReadVarint(std::string_view s, size_t* pos, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*pos >= s.size()) return false;
    const uint8_t b = static_cast<uint8_t>(s[(*pos)++]);
    *v |= static_cast<uint64_t>(b & 0x7F) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

struct Seq {
  bool cleared = false;
  std::map<uint64_t, std::string> names, cats, keys;
};

struct Track {
  uint64_t parent = 0;
  std::string process;  // name of the process it belongs to
  std::vector<std::pair<uint64_t, uint64_t>> intervals;
  std::vector<uint64_t> open;  // begin timestamps, in file order
};

}  // namespace detail

// `max_open_at_end`: slices still open / flows not ended that are tolerated at the end of a
// cut-off trace (the writer emits a slice's BEGIN and END, and a flow's two ends, next to
// each other, so a cut leaves at most one of each).
inline TraceReport ValidateTrace(std::string_view data, bool truncated,
                                 size_t max_open_at_end = 1) {
  using perfetto::protos::TracePacket;
  using perfetto::protos::TrackEvent;
  TraceReport r;
  r.bytes = data.size();
  std::map<uint32_t, detail::Seq> seqs;
  std::map<uint64_t, detail::Track> tracks;
  std::set<uint64_t> flows_started, flows_ended;
  auto error = [&](std::string e) {
    if (r.errors.size() < 50) r.errors.push_back("packet " + std::to_string(r.packets) + ": " + e);
  };
  size_t pos = 0;
  TracePacket p;
  while (pos < data.size()) {
    const size_t at = pos;
    uint64_t len = 0;
    if (static_cast<uint8_t>(data[pos]) != 0x0A) {
      error("byte " + std::to_string(at) + ": not a Trace.packet tag");
      break;
    }
    ++pos;
    if (!detail::ReadVarint(data, &pos, &len) || pos + len > data.size()) {
      if (!truncated) error("byte " + std::to_string(at) + ": incomplete packet at the end");
      break;
    }
    if (!p.ParseFromArray(data.data() + pos, static_cast<int>(len))) {
      error("does not parse");
      break;
    }
    pos += len;
    ++r.packets;
    const uint32_t sid = p.trusted_packet_sequence_id();
    detail::Seq& seq = seqs[sid];
    if (p.has_trusted_packet_sequence_id()) {
      if (!seq.cleared && !(p.sequence_flags() & TracePacket::SEQ_INCREMENTAL_STATE_CLEARED))
        error("first packet of sequence " + std::to_string(sid) + " does not clear its state");
      if (p.sequence_flags() & TracePacket::SEQ_INCREMENTAL_STATE_CLEARED) {
        seq = detail::Seq{};
        seq.cleared = true;
      }
    }
    for (const auto& n : p.interned_data().event_names()) seq.names[n.iid()] = n.name();
    for (const auto& n : p.interned_data().event_categories()) seq.cats[n.iid()] = n.name();
    for (const auto& n : p.interned_data().debug_annotation_names()) seq.keys[n.iid()] = n.name();

    if (p.has_track_descriptor()) {
      ++r.descriptors;
      const auto& d = p.track_descriptor();
      if (!d.has_uuid()) error("track descriptor without uuid");
      detail::Track t;
      if (d.has_parent_uuid()) {
        auto pt = tracks.find(d.parent_uuid());
        if (pt == tracks.end()) error("track " + std::to_string(d.uuid()) + ": parent not described");
        else t.process = pt->second.process;
        t.parent = d.parent_uuid();
      }
      if (d.has_process()) {
        t.process = d.process().process_name();
        if (t.process.rfind("rank ", 0) != 0 || t.process.find(" · pid ") == std::string::npos)
          error("process '" + t.process + "' is not named after its rank");
        r.processes[t.process];
      }
      auto [it, inserted] = tracks.try_emplace(d.uuid(), t);
      if (!inserted && it->second.parent != t.parent) error("track re-described differently");
    }
    if (!p.has_track_event()) continue;

    ++r.track_events;
    const TrackEvent& te = p.track_event();
    if (!p.has_trusted_packet_sequence_id()) error("track event without a sequence id");
    if (!p.has_timestamp()) error("track event without a timestamp");
    const bool uses_interned = te.has_name_iid() || te.category_iids_size() > 0 ||
                               std::any_of(te.debug_annotations().begin(),
                                           te.debug_annotations().end(),
                                           [](const auto& a) { return a.has_name_iid(); });
    if (uses_interned && !(p.sequence_flags() & TracePacket::SEQ_NEEDS_INCREMENTAL_STATE))
      error("uses interned ids without SEQ_NEEDS_INCREMENTAL_STATE");
    std::string name = te.name(), cat;
    if (te.has_name_iid()) {
      auto it = seq.names.find(te.name_iid());
      if (it == seq.names.end()) error("event name iid " + std::to_string(te.name_iid()) + " not defined");
      else name = it->second;
    }
    for (uint64_t c : te.category_iids()) {
      auto it = seq.cats.find(c);
      if (it == seq.cats.end()) error("category iid " + std::to_string(c) + " not defined");
      else cat = it->second;
    }
    for (const auto& a : te.debug_annotations())
      if (a.has_name_iid() && !seq.keys.count(a.name_iid()))
        error("annotation name iid " + std::to_string(a.name_iid()) + " not defined");
    for (uint64_t f : te.flow_ids())
      if (!flows_started.insert(f).second) error("flow " + std::to_string(f) + " started twice");
    for (uint64_t f : te.terminating_flow_ids())
      if (!flows_ended.insert(f).second) error("flow " + std::to_string(f) + " ended twice");

    auto tit = tracks.find(te.track_uuid());
    if (!te.has_track_uuid() || tit == tracks.end()) {
      error("event on track " + std::to_string(te.track_uuid()) + " that was not described");
      continue;
    }
    detail::Track& track = tit->second;
    RankCounts& rc = r.processes[track.process];
    rc.first_ns = std::min<uint64_t>(rc.first_ns, p.timestamp());
    rc.last_ns = std::max<uint64_t>(rc.last_ns, p.timestamp());
    switch (te.type()) {
      case TrackEvent::TYPE_SLICE_BEGIN: {
        track.open.push_back(p.timestamp());
        ++r.slices;
        const bool h2d = name.size() >= 3 && name.compare(name.size() - 3, 3, "H2D") == 0;
        const bool d2h = name.size() >= 3 && name.compare(name.size() - 3, 3, "D2H") == 0;
        if (cat == "kernel") ++rc.kernels;
        else if (cat == "memcpy") rc.gpu_h2d += h2d, rc.gpu_d2h += d2h;
        else if (cat == "memset") ++rc.memsets;
        else if (cat == "launch") ++rc.launches;
        else if (cat == "copy") rc.host_h2d += h2d, rc.host_d2h += d2h;
        else if (cat == "cuda") ++rc.syncs;
        else if (cat == "cuda_api") ++rc.api;
        else if (cat == "nccl") {
          std::string op = name.rfind("nccl", 0) == 0 ? name.substr(4) : name;
          std::transform(op.begin(), op.end(), op.begin(), ::tolower);
          ++rc.collectives[op];
        } else {
          error("slice '" + name + "' without a known category");
        }
        break;
      }
      case TrackEvent::TYPE_SLICE_END:
        if (track.open.empty()) {
          error("slice end on track " + std::to_string(te.track_uuid()) + " with no open slice");
        } else {
          if (p.timestamp() < track.open.back()) error("slice ends before it begins");
          track.intervals.emplace_back(track.open.back(), p.timestamp());
          track.open.pop_back();
        }
        break;
      case TrackEvent::TYPE_INSTANT: ++r.instants; ++rc.instants; break;
      case TrackEvent::TYPE_COUNTER:
        ++r.counter_events;
        ++rc.counters;
        if (!te.has_counter_value() && !te.has_double_counter_value()) error("counter without a value");
        break;
      default: error("track event without a type");
    }
  }

  // Nesting, per track.
  size_t open_at_end = 0;
  for (auto& [uuid, t] : tracks) {
    open_at_end += t.open.size();
    auto& v = t.intervals;
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second > b.second;
    });
    std::vector<uint64_t> ends;  // stack of enclosing ends
    for (const auto& [s, e] : v) {
      while (!ends.empty() && ends.back() <= s) ends.pop_back();
      if (!ends.empty() && e > ends.back()) {
        r.errors.push_back("track " + std::to_string(uuid) + ": slice [" + std::to_string(s) +
                           ", " + std::to_string(e) + "] overlaps one ending at " +
                           std::to_string(ends.back()));
        break;
      }
      ends.push_back(e);
    }
  }
  if (open_at_end > (truncated ? max_open_at_end : 0))
    r.errors.push_back(std::to_string(open_at_end) + " slice(s) never end");
  size_t unended = 0;
  for (uint64_t f : flows_started) unended += !flows_ended.count(f);
  for (uint64_t f : flows_ended)
    if (!flows_started.count(f)) r.errors.push_back("flow " + std::to_string(f) + " ends but never starts");
  if (unended > (truncated ? max_open_at_end : 0))
    r.errors.push_back(std::to_string(unended) + " flow(s) start but never end");
  r.flows = flows_started.size();
  return r;
}

}  // namespace gwtrace
