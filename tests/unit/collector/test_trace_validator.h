// A validator for gpuwatch's Perfetto traces, independent of the writer: it decodes the file
// with the generated perfetto subset classes (proto/perfetto_trace.proto) and checks the
// rules ui.perfetto.dev relies on (field-facts.md, "Perfetto native trace format"):
//   - the file is a sequence of Trace.packet records (a cut-off last one is allowed when
//     `truncated`);
//   - every TrackEvent packet has a trusted_packet_sequence_id and a timestamp;
//   - the first packet of a sequence clears incremental state (flag 1); interned ids are
//     defined (same or earlier packet of that sequence, since its last clear) before use;
//   - timestamps: absolute, or on a sequence clock (64-127) that a ClockSnapshot of the same
//     sequence defined; an incremental clock's deltas are summed in file order as the trace
//     processor does (ClockSynchronizer::ClockDomain::ToNs), so nesting is checked on the
//     absolute times the viewer will show;
//   - the track of an event is its own or its sequence's default (TracePacketDefaults);
//   - every track an event names, and every parent, was described before;
//   - slices on each track nest (each END closes the latest BEGIN of its track in file
//     order; the resulting intervals are disjoint or contained);
//   - every flow that starts also ends (and every end has a start), in either encoding
//     (flow_ids fixed64, or the varint flow_ids_old);
//   - every process is a rank ("rank R · host · pid P"); the one track above them is
//     "trace detail" (which spans have full detail), its slices kept in `detail_spans`.
// It also counts what the trace holds per process, to compare with summary.json: slices are
// classified by their track ("GPU ..." device work, "GPU idle" idle gaps, "thread ..." host
// calls, "CUDA API", "steps") and name ("Memcpy H2D ...", "launch ...", "ncclAllReduce", ...);
// it also sums idle time by name, the steps' double annotations by key, and keeps each
// counter track's samples.
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
  uint64_t steps = 0, nvtx = 0, idle_slices = 0;
  // Launches outside CUPTI's windows (overhead budget): bursts, and the launches they hold.
  uint64_t launch_bursts = 0, burst_launches = 0;
  std::map<std::string, uint64_t> idle_ns;           // "idle: host_wait" -> ns
  uint64_t python_slices = 0;
  std::map<std::string, uint64_t> python_ns;         // sampled frame ("train.py:9 in f") -> ns
  std::map<std::string, double> step_args;           // annotation key -> sum over steps
  std::map<std::string, uint64_t> step_arg_steps;    // annotation key -> steps carrying it
  std::map<std::string, std::vector<std::pair<uint64_t, double>>> counter_samples;  // track -> (ts, value)
  std::set<std::string> counter_tracks;  // counter tracks described, with or without values
  std::vector<std::string> instant_names;
  // The "critical path" track: its slices, each one's time by name, its arguments summed.
  uint64_t path_slices = 0;
  std::map<std::string, uint64_t> path_ns;
  std::map<std::string, double> path_args;
  std::map<std::string, uint64_t> collectives;  // "allreduce" -> count
  // When each NCCL kernel on the GPU ended, in file order (a collective ends at the same
  // time on every rank of it: the merged traces of several hosts must show that).
  std::vector<uint64_t> comm_kernel_ends;
  std::vector<uint64_t> kernel_starts;  // every kernel slice's start, in file order
  // Earliest and latest timestamp of the process's track events (one timeline for every
  // rank, multi-host included).
  uint64_t first_ns = UINT64_MAX, last_ns = 0;
};

struct TraceReport {
  std::vector<std::string> errors;
  uint64_t bytes = 0, packets = 0, track_events = 0, slices = 0, flows = 0;
  uint64_t counter_events = 0, instants = 0, descriptors = 0;
  uint64_t first_slice_ns = UINT64_MAX, last_slice_end_ns = 0;  // absolute, after deltas
  std::map<std::string, RankCounts> processes;  // process name -> counts
  struct Span {
    std::string name;  // "full detail", "summary only", "nothing kept"
    uint64_t from_ns, to_ns;
  };
  std::vector<Span> detail_spans;  // the "trace detail" track, in file order
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

struct Clock {
  uint64_t last = 0;        // on this clock
  int64_t to_boottime = 0;  // BOOTTIME - this clock, from the snapshot
  bool incremental = false;
};

struct Seq {
  bool cleared = false;
  std::map<uint64_t, std::string> names, cats, keys;
  uint32_t default_clock = 0;
  uint64_t default_track = 0;
  bool has_default_track = false;
  std::map<uint32_t, Clock> clocks;  // sequence-scoped clocks (64-127)
};

struct Track {
  uint64_t parent = 0;
  std::string name;
  std::string process;  // name of the process it belongs to
  std::vector<std::pair<uint64_t, uint64_t>> intervals;
  std::vector<uint64_t> open;  // begin timestamps, in file order
  std::vector<std::string> open_names;
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
    if (p.has_trace_packet_defaults()) {
      const auto& d = p.trace_packet_defaults();
      seq.default_clock = d.timestamp_clock_id();
      seq.has_default_track = d.track_event_defaults().has_track_uuid();
      seq.default_track = d.track_event_defaults().track_uuid();
    }
    if (p.has_clock_snapshot()) {
      const auto& clocks = p.clock_snapshot().clocks();
      auto boot = std::find_if(clocks.begin(), clocks.end(),
                               [](const auto& c) { return c.clock_id() == 6; });
      for (const auto& c : clocks) {
        if (c.clock_id() < 64) continue;
        if (c.clock_id() >= 128) error("clock id " + std::to_string(c.clock_id()) + " is reserved");
        if (!p.has_trusted_packet_sequence_id()) error("sequence clock without a sequence id");
        if (boot == clocks.end()) error("sequence clock not related to BOOTTIME (the trace clock)");
        const int64_t off = boot == clocks.end() ? 0 : static_cast<int64_t>(boot->timestamp() - c.timestamp());
        seq.clocks[c.clock_id()] = {c.timestamp(), off, c.is_incremental()};
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
      t.name = d.name();
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
      if (d.has_counter() && !t.process.empty()) r.processes[t.process].counter_tracks.insert(t.name);
      auto [it, inserted] = tracks.try_emplace(d.uuid(), t);
      if (!inserted && it->second.parent != t.parent) error("track re-described differently");
    }
    if (!p.has_track_event()) continue;

    ++r.track_events;
    const TrackEvent& te = p.track_event();
    if (!p.has_trusted_packet_sequence_id()) error("track event without a sequence id");
    if (!p.has_timestamp()) error("track event without a timestamp");
    uint64_t ts = p.timestamp();
    const uint32_t clock = p.has_timestamp_clock_id() ? p.timestamp_clock_id() : seq.default_clock;
    if (clock >= 64) {
      auto c = seq.clocks.find(clock);
      if (c == seq.clocks.end()) {
        error("timestamp on clock " + std::to_string(clock) + " that its sequence did not define");
      } else {
        if (c->second.incremental) {
          if (ts >= (uint64_t{1} << 62)) error("incremental timestamp goes backwards");
          ts = c->second.last += ts;
        }
        ts = static_cast<uint64_t>(static_cast<int64_t>(ts) + c->second.to_boottime);
      }
    }
    std::string name = te.name();
    if (te.has_name_iid()) {
      auto it = seq.names.find(te.name_iid());
      if (it == seq.names.end()) error("event name iid " + std::to_string(te.name_iid()) + " not defined");
      else name = it->second;
    }
    for (uint64_t c : te.category_iids()) {
      auto it = seq.cats.find(c);
      if (it == seq.cats.end()) error("category iid " + std::to_string(c) + " not defined");
    }
    for (const auto& a : te.debug_annotations())
      if (a.has_name_iid() && !seq.keys.count(a.name_iid()))
        error("annotation name iid " + std::to_string(a.name_iid()) + " not defined");
    std::vector<uint64_t> starts(te.flow_ids().begin(), te.flow_ids().end());
    starts.insert(starts.end(), te.flow_ids_old().begin(), te.flow_ids_old().end());
    std::vector<uint64_t> ends(te.terminating_flow_ids().begin(), te.terminating_flow_ids().end());
    ends.insert(ends.end(), te.terminating_flow_ids_old().begin(), te.terminating_flow_ids_old().end());
    for (uint64_t f : starts)
      if (!flows_started.insert(f).second) error("flow " + std::to_string(f) + " started twice");
    for (uint64_t f : ends)
      if (!flows_ended.insert(f).second) error("flow " + std::to_string(f) + " ended twice");

    const bool has_track = te.has_track_uuid() || seq.has_default_track;
    const uint64_t track_uuid = te.has_track_uuid() ? te.track_uuid() : seq.default_track;
    auto tit = tracks.find(track_uuid);
    if (!has_track || tit == tracks.end()) {
      error("event on track " + std::to_string(track_uuid) + " that was not described");
      continue;
    }
    detail::Track& track = tit->second;
    if (track.process.empty()) {  // above the ranks: only the "trace detail" track
      if (track.name != "trace detail") {
        error("event on track '" + track.name + "' of no rank");
      } else if (te.type() == TrackEvent::TYPE_SLICE_BEGIN) {
        track.open.push_back(ts);
        track.open_names.push_back(name);
      } else if (te.type() == TrackEvent::TYPE_SLICE_END && !track.open.empty()) {
        track.intervals.emplace_back(track.open.back(), ts);
        r.detail_spans.push_back({track.open_names.back(), track.open.back(), ts});
        track.open.pop_back();
        track.open_names.pop_back();
      } else {
        error("unexpected event on the trace detail track");
      }
      continue;
    }
    RankCounts& rc = r.processes[track.process];
    rc.first_ns = std::min<uint64_t>(rc.first_ns, ts);  // absolute, deltas summed
    rc.last_ns = std::max<uint64_t>(rc.last_ns, ts);
    switch (te.type()) {
      case TrackEvent::TYPE_SLICE_BEGIN: {
        track.open.push_back(ts);
        track.open_names.push_back(name);
        ++r.slices;
        r.first_slice_ns = std::min(r.first_slice_ns, ts);
        const bool h2d = name.find(" H2D") != std::string::npos;
        const bool d2h = name.find(" D2H") != std::string::npos;
        const std::string& tn = track.name;
        if (tn == "GPU idle") {
          ++rc.idle_slices;
        } else if (tn.rfind("GPU ", 0) == 0) {
          if (name.rfind("Memcpy ", 0) == 0) rc.gpu_h2d += h2d, rc.gpu_d2h += d2h;
          else if (name == "Memset") ++rc.memsets;
          else ++rc.kernels, rc.kernel_starts.push_back(ts);
        } else if (tn.rfind("thread ", 0) == 0 || tn.rfind("other threads", 0) == 0) {
          if (name.rfind("launch ", 0) == 0) {
            ++rc.launches;
          } else if (name.rfind("kernel launches", 0) == 0) {
            ++rc.launch_bursts;
            bool counted = false;
            for (const auto& a : te.debug_annotations())
              if (seq.keys[a.name_iid()] == "launches" && a.has_uint_value()) rc.burst_launches += a.uint_value(), counted = true;
            if (!counted) error("launch burst '" + name + "' without a launches count");
          } else if (name.rfind("cudaMemcpy", 0) == 0) {
            rc.host_h2d += h2d, rc.host_d2h += d2h;
          } else if (name.rfind("nccl", 0) == 0) {
            std::string op = name.substr(4);
            std::transform(op.begin(), op.end(), op.begin(), ::tolower);
            ++rc.collectives[op];
          } else if (name.rfind("cuda", 0) == 0) {
            ++rc.syncs;
          } else if (name.rfind("NVTX ", 0) == 0) {
            ++rc.nvtx;
          } else {
            error("host slice '" + name + "' of an unknown kind");
          }
        } else if (tn.rfind("CUDA API", 0) == 0) {
          ++rc.api;
        } else if (tn.rfind("python · thread ", 0) == 0) {
          ++rc.python_slices;
        } else if (tn == "critical path") {
          ++rc.path_slices;
          for (const auto& a : te.debug_annotations())
            if (a.has_double_value()) rc.path_args[seq.keys[a.name_iid()]] += a.double_value();
        } else if (tn == "steps") {
          ++rc.steps;
          for (const auto& a : te.debug_annotations())
            if (a.has_double_value()) {
              rc.step_args[seq.keys[a.name_iid()]] += a.double_value();
              ++rc.step_arg_steps[seq.keys[a.name_iid()]];
            }
        } else {
          error("slice '" + name + "' on track '" + tn + "' of an unknown kind");
        }
        break;
      }
      case TrackEvent::TYPE_SLICE_END:
        if (track.open.empty()) {
          error("slice end on track " + std::to_string(track_uuid) + " with no open slice");
        } else {
          if (ts < track.open.back()) error("slice ends before it begins");
          track.intervals.emplace_back(track.open.back(), ts);
          r.last_slice_end_ns = std::max(r.last_slice_end_ns, ts);
          if (track.name == "GPU idle") rc.idle_ns[track.open_names.back()] += ts - track.open.back();
          if (track.name == "critical path") rc.path_ns[track.open_names.back()] += ts - track.open.back();
          if (track.name.rfind("GPU ", 0) == 0 && track.open_names.back().rfind("ncclDevKernel", 0) == 0)
            rc.comm_kernel_ends.push_back(ts);
          if (track.name.rfind("python · thread ", 0) == 0)
            rc.python_ns[track.open_names.back()] += ts - track.open.back();
          track.open.pop_back();
          track.open_names.pop_back();
        }
        break;
      case TrackEvent::TYPE_INSTANT:
        ++r.instants;
        ++rc.instants;
        rc.instant_names.push_back(name);
        break;
      case TrackEvent::TYPE_COUNTER:
        ++r.counter_events;
        ++rc.counters;
        if (!te.has_counter_value() && !te.has_double_counter_value()) error("counter without a value");
        rc.counter_samples[track.name].emplace_back(
            ts, te.has_counter_value() ? static_cast<double>(te.counter_value()) : te.double_counter_value());
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
