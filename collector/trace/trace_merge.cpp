// See trace_merge.h.
#include "trace/trace_merge.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string_view>
#include <unordered_map>

#include "common/time_shift.h"
#include "trace/packet_encoder.h"
#include "trace/trace_file.h"

namespace gpuwatch::collector {
namespace {

using namespace pkt;

// TrackDescriptor / ProcessDescriptor / ThreadDescriptor / TrackEvent fields the merge
// rewrites (proto/perfetto_trace.proto; the writer's own are in packet_encoder.h).
constexpr uint32_t kTrackDescriptor = 60, kTdUuid = 1, kTdParent = 5, kTdProcess = 3,
                   kTdThread = 4, kPdPid = 1, kPdName = 6, kDefaultsTrackEvent = 11,
                   kDefaultsTrackUuid = 11, kSnapshotClock = 1, kClockTimestamp = 2,
                   kTeFlowIds = 47, kTeTerminatingFlowIds = 48;
constexpr uint32_t kI64 = 1, kI32 = 5;
constexpr uint64_t kMaxPacket = 64u << 20;  // the writer's are bytes to kilobytes

bool ReadVarint(std::string_view s, size_t* pos, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*pos >= s.size()) return false;
    const uint8_t b = static_cast<uint8_t>(s[(*pos)++]);
    *v |= static_cast<uint64_t>(b & 0x7F) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

// One field of a message: its number, wire type, value (varint / fixed) or body (bytes),
// and its whole encoding (tag included) to copy it unchanged.
struct Fld {
  uint32_t num = 0, type = 0;
  uint64_t v = 0;
  std::string_view body, raw;
};

bool NextField(std::string_view s, size_t* pos, Fld* f) {
  const size_t at = *pos;
  uint64_t tag;
  if (!ReadVarint(s, pos, &tag)) return false;
  f->num = static_cast<uint32_t>(tag >> 3);
  f->type = static_cast<uint32_t>(tag & 7);
  switch (f->type) {
    case kVarint:
      if (!ReadVarint(s, pos, &f->v)) return false;
      break;
    case kI64:
    case kI32: {
      const size_t n = f->type == kI64 ? 8 : 4;
      if (*pos + n > s.size()) return false;
      f->v = 0;
      std::memcpy(&f->v, s.data() + *pos, n);
      *pos += n;
      break;
    }
    case kLen: {
      uint64_t len;
      if (!ReadVarint(s, pos, &len) || len > s.size() - *pos) return false;
      f->body = s.substr(*pos, len);
      *pos += len;
      break;
    }
    default: return false;  // groups: not in a trace
  }
  f->raw = s.substr(at, *pos - at);
  return true;
}

// Calls `each` on every field of `s`; false when `s` does not parse.
template <class Each>
bool Fields(std::string_view s, const Each& each) {
  size_t pos = 0;
  Fld f;
  while (pos < s.size()) {
    if (!NextField(s, &pos, &f)) return false;
    each(f);
  }
  return true;
}

// The rank a process track is named after: "rank R · host · pid P" (rank_trace.cpp).
bool RankOfProcessName(std::string_view name, int* rank) {
  if (name.substr(0, 5) != "rank ") return false;
  char* end = nullptr;
  const std::string digits(name.substr(5, 12));
  const long r = std::strtol(digits.c_str(), &end, 10);
  if (end == digits.c_str() || (*end != ' ' && *end != '\0')) return false;
  *rank = static_cast<int>(r);
  return true;
}

// Trace.packet records of one file, one at a time through a bounded buffer.
class PacketReader {
 public:
  explicit PacketReader(std::FILE* f) : f_(f) {}
  // 1: a packet in `*packet` (valid until the next call); 0: the end; -1: not a trace;
  // -2: the file ends inside a packet.
  int Next(std::string_view* packet) {
    const size_t avail = Fill(11);  // a tag and the longest varint
    if (avail == 0) return 0;
    std::string_view head(buf_.data() + pos_, avail);
    if (head[0] != 0x0A) return -1;
    size_t p = 1;
    uint64_t len;
    if (!ReadVarint(head, &p, &len)) return avail >= 11 ? -1 : -2;
    if (len > kMaxPacket) return -1;
    if (Fill(p + len) < p + len) return -2;
    *packet = std::string_view(buf_.data() + pos_ + p, len);
    pos_ += p + len;
    return 1;
  }
  bool error() const { return std::ferror(f_) != 0; }

 private:
  // Tries to have `n` unread bytes buffered; how many there are (fewer at the file's end).
  size_t Fill(size_t n) {
    if (buf_.size() - pos_ < n) {
      buf_.erase(0, pos_);
      pos_ = 0;
      while (buf_.size() < n) {
        const size_t want = std::max<size_t>(n - buf_.size(), kChunk);
        const size_t old = buf_.size();
        buf_.resize(old + want);
        const size_t got = std::fread(buf_.data() + old, 1, want, f_);
        buf_.resize(old + got);
        if (got == 0) break;
      }
    }
    return buf_.size() - pos_;
  }
  static constexpr size_t kChunk = 1 << 20;
  std::FILE* f_;
  std::string buf_;
  size_t pos_ = 0;
};

// What one pass over a packet learns before deciding whether it is kept.
struct PacketFacts {
  bool has_seq = false, has_clock = false;
  uint32_t seq = 0, clock = 0;
  bool has_defaults_clock = false;
  uint32_t defaults_clock = 0;
  bool has_uuid = false, has_parent = false, has_event_track = false, has_default_track = false;
  uint64_t uuid = 0, parent = 0, event_track = 0, default_track = 0;
  int named_rank = -1;  // a process track's rank
};

class Merger {
 public:
  Merger(size_t inputs, TraceFile* out, MergeStats* stats) : n_(inputs), out_(out), stats_(stats) {}

  bool Input(size_t index, const MergeInput& in, std::string* error);

 private:
  uint64_t Spread(uint64_t id) {
    uint64_t r;
    if (__builtin_mul_overflow(id, n_, &r) || __builtin_add_overflow(r, index_, &r)) {
      overflow_ = true;
      return id;
    }
    return r;
  }
  int32_t Pid(int32_t pid) {
    auto [it, added] = pids_.try_emplace({index_, pid}, pid);
    if (added && !used_pids_.insert(pid).second) {
      // Perfetto merges processes by pid: two hosts' ranks may share one.
      while (!used_pids_.insert(next_pid_).second) ++next_pid_;
      it->second = next_pid_;
    }
    return it->second;
  }
  bool Scan(std::string_view packet, PacketFacts* f);
  int RankOf(const PacketFacts& f);
  void Rewrite(std::string_view packet, const PacketFacts& f, int64_t offset);
  void RewriteEvent(std::string_view event, std::string& o);
  void PutFlows(const Fld& x, std::string& o);

  size_t n_, index_ = 0;
  TraceFile* out_;
  MergeStats* stats_;
  bool overflow_ = false;
  // Per input: which rank a track or sequence belongs to; the new sequence ids; each
  // sequence's default clock (64+: incremental, its times are deltas).
  std::unordered_map<uint64_t, int> rank_of_track_;
  std::unordered_map<uint32_t, int> rank_of_seq_;
  std::unordered_map<uint32_t, uint32_t> seq_clock_;
  std::unordered_map<uint32_t, uint32_t> new_seq_;
  uint32_t next_seq_ = 1;
  std::map<std::pair<size_t, int32_t>, int32_t> pids_;
  std::set<int32_t> used_pids_;
  int32_t next_pid_ = 0x40000000;
  std::string packet_, nested_, inner_;
};

bool Merger::Scan(std::string_view packet, PacketFacts* f) {
  return Fields(packet, [&](const Fld& x) {
    switch (x.num) {
      case kSequenceId: f->has_seq = true, f->seq = static_cast<uint32_t>(x.v); break;
      case kClockId: f->has_clock = true, f->clock = static_cast<uint32_t>(x.v); break;
      case kDefaults:
        Fields(x.body, [&](const Fld& d) {
          if (d.num == kClockId) f->has_defaults_clock = true, f->defaults_clock = static_cast<uint32_t>(d.v);
          if (d.num == kDefaultsTrackEvent)
            Fields(d.body, [&](const Fld& e) {
              if (e.num == kDefaultsTrackUuid) f->has_default_track = true, f->default_track = e.v;
            });
        });
        break;
      case kTrackDescriptor:
        Fields(x.body, [&](const Fld& d) {
          if (d.num == kTdUuid) f->has_uuid = true, f->uuid = d.v;
          if (d.num == kTdParent) f->has_parent = true, f->parent = d.v;
          if (d.num == kTdProcess)
            Fields(d.body, [&](const Fld& p) {
              if (p.num == kPdName) RankOfProcessName(p.body, &f->named_rank);
            });
        });
        break;
      case kTrackEvent:
        Fields(x.body, [&](const Fld& e) {
          if (e.num == kTeTrackUuid) f->has_event_track = true, f->event_track = e.v;
        });
        break;
      default: break;
    }
  });
}

int Merger::RankOf(const PacketFacts& f) {
  auto track_rank = [&](uint64_t uuid) {
    auto it = rank_of_track_.find(uuid);
    return it == rank_of_track_.end() ? -1 : it->second;
  };
  int rank = -1;
  if (f.has_uuid) {  // a track: a process track's own rank, or its parent's
    rank = f.named_rank >= 0 ? f.named_rank : f.has_parent ? track_rank(f.parent) : -1;
    if (rank >= 0) rank_of_track_[f.uuid] = rank;
  }
  if (rank < 0 && f.has_seq) {
    auto it = rank_of_seq_.find(f.seq);
    if (it != rank_of_seq_.end()) rank = it->second;
  }
  if (rank < 0 && f.has_event_track) rank = track_rank(f.event_track);
  if (rank < 0 && f.has_default_track) rank = track_rank(f.default_track);
  if (rank >= 0 && f.has_seq) rank_of_seq_.emplace(f.seq, rank);
  return rank;
}

// A repeated uint64 (varint, or packed) or fixed64 (or packed) flow id field, spread.
void Merger::PutFlows(const Fld& x, std::string& o) {
  const bool fixed = x.num == kTeFlowIds || x.num == kTeTerminatingFlowIds;
  auto put = [&](uint64_t id) {
    if (fixed) {
      Tag(o, x.num, static_cast<wire::enc::WireType>(kI64));
      char b[8];
      std::memcpy(b, &id, 8);
      o.append(b, 8);
    } else {
      Field(o, x.num, id);
    }
  };
  if (x.type != kLen) return put(Spread(x.v));
  size_t pos = 0;  // packed: written back unpacked, which parsers accept alike
  while (pos < x.body.size()) {
    uint64_t id = 0;
    if (fixed) {
      if (pos + 8 > x.body.size()) break;
      std::memcpy(&id, x.body.data() + pos, 8);
      pos += 8;
    } else if (!ReadVarint(x.body, &pos, &id)) {
      break;
    }
    put(Spread(id));
  }
}

void Merger::RewriteEvent(std::string_view event, std::string& o) {
  Fields(event, [&](const Fld& e) {
    switch (e.num) {
      case kTeTrackUuid: Field(o, e.num, Spread(e.v)); break;
      case kTeFlowOld:
      case kTeTerminatingFlowOld:
      case kTeFlowIds:
      case kTeTerminatingFlowIds: PutFlows(e, o); break;
      default: o.append(e.raw);
    }
  });
}

void Merger::Rewrite(std::string_view packet, const PacketFacts& f, int64_t offset) {
  uint32_t clock = f.has_clock ? f.clock : 0;
  if (f.has_seq) {
    if (f.has_defaults_clock) seq_clock_[f.seq] = f.defaults_clock;
    if (!f.has_clock) {
      auto it = seq_clock_.find(f.seq);
      if (it != seq_clock_.end()) clock = it->second;
    }
  }
  std::string& o = packet_;
  o.clear();
  Fields(packet, [&](const Fld& x) {
    switch (x.num) {
      case kTimestamp:  // absolute on the trace clock (0-63), else a sequence clock's
        Field(o, x.num, clock < kIncrementalClock ? ShiftNs(x.v, offset) : x.v);
        break;
      case kSequenceId: {
        auto [it, added] = new_seq_.try_emplace(f.seq, next_seq_);
        next_seq_ += added;
        Field(o, x.num, it->second);
        break;
      }
      case kClockSnapshot:  // every clock's reading at the snapshot moves with the host
        nested_.clear();
        Fields(x.body, [&](const Fld& c) {
          if (c.num != kSnapshotClock) {
            nested_.append(c.raw);
            return;
          }
          inner_.clear();
          Fields(c.body, [&](const Fld& v) {
            if (v.num == kClockTimestamp) Field(inner_, v.num, ShiftNs(v.v, offset));
            else inner_.append(v.raw);
          });
          Nested(nested_, c.num, inner_);
        });
        Nested(o, x.num, nested_);
        break;
      case kTrackEvent:
        nested_.clear();
        RewriteEvent(x.body, nested_);
        Nested(o, x.num, nested_);
        break;
      case kDefaults:
        nested_.clear();
        Fields(x.body, [&](const Fld& d) {
          if (d.num != kDefaultsTrackEvent) {
            nested_.append(d.raw);
            return;
          }
          inner_.clear();
          RewriteEvent(d.body, inner_);  // track_uuid has the same number there
          Nested(nested_, d.num, inner_);
        });
        Nested(o, x.num, nested_);
        break;
      case kTrackDescriptor:
        nested_.clear();
        Fields(x.body, [&](const Fld& d) {
          if (d.num == kTdUuid || d.num == kTdParent) {
            Field(nested_, d.num, Spread(d.v));
            return;
          }
          if (d.num != kTdProcess && d.num != kTdThread) {
            nested_.append(d.raw);
            return;
          }
          inner_.clear();
          Fields(d.body, [&](const Fld& p) {
            // int32: a negative one is sign-extended to 64 bits on the wire.
            if (p.num == kPdPid) Field(inner_, p.num, static_cast<uint64_t>(int64_t{Pid(static_cast<int32_t>(p.v))}));
            else inner_.append(p.raw);
          });
          Nested(nested_, d.num, inner_);
        });
        Nested(o, x.num, nested_);
        break;
      default: o.append(x.raw);
    }
  });
  out_->AppendEncoded(o);
}

bool Merger::Input(size_t index, const MergeInput& in, std::string* error) {
  index_ = index;
  rank_of_track_.clear();
  rank_of_seq_.clear();
  seq_clock_.clear();
  new_seq_.clear();
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(in.path.c_str(), "rb"), &std::fclose);
  if (!file) {
    *error = "cannot read " + in.path + ": " + std::strerror(errno);
    return false;
  }
  PacketReader reader(file.get());
  std::string_view packet;
  int got;
  while ((got = reader.Next(&packet)) == 1) {
    ++stats_->packets_read;
    PacketFacts f;
    if (!Scan(packet, &f)) {
      *error = in.path + ": packet " + std::to_string(stats_->packets_read) + " does not parse";
      return false;
    }
    const int rank = RankOf(f);
    if (rank < 0) continue;
    auto chosen = in.offset_ns.find(rank);
    if (chosen == in.offset_ns.end() && !in.every_rank) continue;
    Rewrite(packet, f, chosen == in.offset_ns.end() ? 0 : chosen->second);
    ++stats_->packets_by_rank[rank];
    ++stats_->packets_written;
  }
  if (reader.error()) {
    *error = "cannot read " + in.path + ": " + std::strerror(errno);
    return false;
  }
  if (got == -1) {
    *error = in.path + ": not a Perfetto trace (or damaged after packet " +
             std::to_string(stats_->packets_read) + ")";
    return false;
  }
  if (got == -2) stats_->truncated = true;  // a collector killed mid-write: the rest is valid
  if (overflow_) {
    *error = in.path + ": track or flow ids too large to renumber";
    return false;
  }
  out_->Flush();
  return true;
}

}  // namespace

bool MergeTraces(const std::vector<MergeInput>& inputs, const std::string& out_path,
                 MergeStats* stats, std::string* error) {
  TraceOptions options;  // everything is copied: no level, no cap
  options.level = TraceLevel::kFull;
  options.max_bytes = uint64_t{1} << 60;
  auto out = TraceFile::Open(out_path, options, error);
  if (!out) return false;
  Merger merger(inputs.size(), out.get(), stats);
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!merger.Input(i, inputs[i], error)) return false;
  out->Flush();
  stats->bytes_written = out->bytes();
  if (!out->error().empty()) {
    *error = out->error();
    return false;
  }
  return true;
}

}  // namespace gpuwatch::collector
