#include "ingest/connection.h"

#include "ingest/clock_estimate.h"
#include "ingest/clock_shift.h"
#include "ingest/tcp_listener.h"
#include "common/out_dir.h"

#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <set>

namespace gpuwatch::collector {

namespace {

// This process's CPU time (every thread).
uint64_t CollectorCpuNs() {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0) return 0;
  const auto ns = [](const timeval& t) { return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000ull + t.tv_usec * 1000ull; };
  return ns(u.ru_utime) + ns(u.ru_stime);
}

// The ranks (job, rank) that have connected to this process live, with this one: the
// collector's CPU is shared equally among them. Bounded: past the cap, the count stays.
size_t ServedRanks(const std::string& job, int rank) {
  static std::set<std::pair<std::string, int>> served;
  if (served.size() < 65536) served.emplace(job, rank);
  return served.size();
}

}  // namespace

void SanitizeHello(wire::Hello& h) {
  auto clip = [](std::string* s, size_t n) {
    if (s->size() > n) s->resize(n);
  };
  clip(h.mutable_job_id(), 256);
  clip(h.mutable_rank_source(), 32);
  clip(h.mutable_host(), 256);
  clip(h.mutable_out_dir(), 4096);
  clip(h.mutable_library_version(), 64);
}

std::string Connection::Describe() const {
  const bool tcp = token_ != nullptr;
  if (clock_peer_)
    return "clock probes of the collector on " + clock_peer_host_ +
           (tcp ? " (TCP " + tcp_address_ + ")" : "");
  if (!rank_) return tcp ? "TCP peer " + tcp_address_ : "client pid " + std::to_string(peer_pid_);
  return "rank " + std::to_string(rank_no_) + " of job " + job_id_ + " (pid " +
         std::to_string(peer_pid_) + (tcp ? ", TCP " + tcp_address_ : "") + ")";
}

bool Connection::Fail(std::string why) {
  error_ = std::move(why);
  return false;
}

bool Connection::OnBytes(std::string_view bytes, wire::FrameScratch& scratch, Clock::time_point now) {
  if (closed_) return false;
  reader_.Feed(bytes);
  bool ok = true;
  for (bool more = true; more && ok;) {
    wire::Frame& frame = scratch.Fresh();
    switch (reader_.Next(frame)) {
      case wire::FrameReader::Status::kNeedMore: more = false; break;
      case wire::FrameReader::Status::kError: ok = Fail(reader_.error()); break;
      case wire::FrameReader::Status::kFrame: ok = OnFrame(frame, reader_.last_raw(), now); break;
    }
  }
  // One write per read: what this read completed is in the kernel before the next read.
  FlushJournal();
  CheckpointJournal(now);
  return ok;
}

void Connection::OpenJournal() {
  if (!journal_opt_ || !journal_opt_->enabled || rank_->journal()) return;
  if (!rank_->storage().journal.error.empty()) return;  // failed before: said once already
  const std::string dir = jobs_.OutDir(job_id_, journal_opt_->out_override);
  std::string error;
  auto j = JournalWriter::Open(dir, rank_->hello().rank(), rank_->hello().pid(),
                               journal_opt_->max_bytes, &error);
  if (!j) {
    rank_->storage().journal.error = error;
    notices_.push_back(Describe() + ": not journaled: " + error);
    return;
  }
  j->set_checkpoint_interval(journal_opt_->checkpoint_s, rank_->storage().journal.checkpoints, Clock::now());
  rank_->set_journal(std::move(j));
}

void Connection::CheckpointJournal(Clock::time_point now) {
  if (!rank_ || !rank_->journal()) return;
  JournalWriter& j = *rank_->journal();
  // Every frame the rank took is journaled (or past the cap) by now: the state holds them all.
  if (!j.CheckpointDue(now)) return;
  const auto started = std::chrono::steady_clock::now();
  j.WriteCheckpoint(rank_->CheckpointState(), rank_->max_batch_seq(), now, started);
  // Encoding built the rank's whole state as a JSON tree (tens of MB for a 3 MB checkpoint)
  // and freed it; glibc keeps freed heap for reuse, and each checkpoint, a little larger than
  // the last, left the collector's resident memory higher (25 to 208 MB over the 8
  // checkpoints of a 10-minute launch loop). Given back to the system here.
  malloc_trim(0);
  rank_->storage().journal = j.status();
  if (std::string n = j.TakeNotice(); !n.empty()) notices_.push_back(Describe() + ": " + n);
}

void Connection::FlushJournal() {
  if (!rank_ || !rank_->journal()) return;
  JournalWriter& j = *rank_->journal();
  j.Flush();
  rank_->storage().journal = j.status();
  if (std::string n = j.TakeNotice(); !n.empty()) notices_.push_back(Describe() + ": " + n);
}

std::vector<std::string> Connection::TakeNotices() {
  std::vector<std::string> n;
  n.swap(notices_);
  return n;
}

bool Connection::OnFrame(wire::Frame& frame, std::string_view raw, Clock::time_point now) {
  if (clock_peer_) {
    if (frame.body_case() != wire::Frame::kClockProbe)
      return Fail("a clock-probe connection sent something else than a ClockProbe");
    return OnClockProbe(frame.clock_probe());
  }
  if (!rank_) {
    if (frame.body_case() == wire::Frame::kClockProbe) return OnClockProbe(frame.clock_probe());
    if (frame.body_case() != wire::Frame::kHello)
      return Fail("first frame is not a Hello (the stream is not from libgpuwatch)");
    if (!OnHello(frame.hello())) return false;
    if (sink_) sink_->OnFrame(frame, raw);
    if (JournalWriter* j = rank_->journal(); j && !frame.hello().token().empty()) {
      // The token is a secret: the journal gets the Hello without it.
      wire::Frame bare = frame;
      bare.mutable_hello()->clear_token();
      std::string bytes;
      wire::AppendFrame(bare, bytes);
      j->Add(bytes);
      j->set_hello(bytes);
      return true;
    }
    if (JournalWriter* j = rank_->journal()) j->set_hello(raw);
  } else {
    if (frame.body_case() == wire::Frame::kHello) return Fail("second Hello on one connection");
    // Upstream first, as it arrived: a forwarded rank keeps its own clock on the wire (the
    // root shifts it with the offset in the Hello, which the journal keeps for replay too).
    if (sink_) sink_->OnFrame(frame, raw);
    ShiftFrame(frame, clock_shift_);
    switch (frame.body_case()) {
      case wire::Frame::kBatch: rank_->OnBatch(frame.batch()); break;
      case wire::Frame::kGoodbye:
        rank_->OnGoodbye(frame.goodbye());
        NoteCollectorCpu();
        said_goodbye_ = true;
        break;
      case wire::Frame::kHeartbeat: rank_->OnHeartbeat(frame.heartbeat(), now); break;
      case wire::Frame::kRankDigest: {
        std::string error;
        if (!rank_->OnDigest(frame.rank_digest(), &error)) return Fail(error);
        break;
      }
      default: break;  // a body this collector does not know: skip, stay compatible
    }
  }
  // Accepted: into the journal exactly as it arrived (a later report replays it).
  if (JournalWriter* j = rank_->journal()) j->Add(raw);
  return true;
}

bool Connection::CheckToken(const std::string& token, const char* where) {
  if (!token_) return true;
  if (token.empty())
    return Fail(std::string("no job token in its ") + where + " (a TCP peer must set GPUWATCH_TOKEN)");
  if (!TokenEquals(token, *token_)) return Fail("wrong job token (GPUWATCH_TOKEN)");
  return true;
}

bool Connection::OnClockProbe(const wire::ClockProbe& probe) {
  // Read the clock first: the time between reading the probe and answering it is in
  // neither leg the prober measures, so it only widens the round trip it sees.
  const uint64_t root_ns = MonotonicNs();
  if (!clock_peer_) {
    // The first probe authenticates the connection as a Hello would.
    if (!CheckToken(probe.token(), "first clock probe")) return false;
    if (probe.protocol_version() != wire::PROTOCOL_VERSION)
      return Fail("clock probes of protocol " + std::to_string(probe.protocol_version()) +
                  ", this collector speaks " + std::to_string(wire::PROTOCOL_VERSION));
    clock_peer_ = true;
    clock_peer_host_ = probe.host().substr(0, 256);
  }
  wire::Frame answer;
  answer.mutable_clock_probe()->set_sent_ns(probe.sent_ns());
  answer.mutable_clock_probe()->set_root_ns(root_ns);
  wire::AppendFrame(answer, replies_);
  return true;
}

bool Connection::OnHello(wire::Hello hello) {
  // Before anything else, so a peer without the token learns nothing and attaches nothing.
  if (!CheckToken(hello.token(), "Hello")) return false;
  if (token_) peer_pid_ = hello.pid();  // TCP has no kernel-verified pid: the rank's word for it
  hello.clear_token();  // never kept: not in the summary, the trace or the log
  SanitizeHello(hello);
  if (hello.protocol_version() != wire::PROTOCOL_VERSION)
    return Fail("rank " + std::to_string(hello.rank()) + " (pid " + std::to_string(peer_pid_) +
                ") speaks protocol " + std::to_string(hello.protocol_version()) +
                ", this collector speaks " + std::to_string(wire::PROTOCOL_VERSION));
  // A rank forwarded by a host collector: onto this collector's clock from here on.
  clock_shift_ = hello.clock_offset_ns();
  ShiftHello(hello, clock_shift_);
  std::string error;
  RankSink* rank = jobs_.Attach(hello, &error);
  if (!rank) return Fail(error);
  rank_ = rank;
  job_id_ = hello.job_id();
  rank_no_ = hello.rank();
  // A rank a host collector forwards: the CPU that matters is that collector's, on the rank's
  // host (it sends it in the rank's digest; raw frames cannot carry it), not this one's.
  if (!hello.via_collector().empty()) measure_cpu_ = false;
  if (measure_cpu_) ServedRanks(job_id_, rank_no_);
  OpenJournal();
  return true;
}

void Connection::NoteCollectorCpu() {
  if (measure_cpu_) rank_->NoteCollectorCpu(CollectorCpuNs() / std::max<size_t>(1, ServedRanks(job_id_, rank_no_)));
}

void Connection::Close(Clock::time_point now) {
  if (closed_) return;
  closed_ = true;
  FlushJournal();
  if (rank_ && !said_goodbye_) NoteCollectorCpu();  // a rank that ended without one (killed)
  // The rank first: its last connection's close interprets what it held, and an
  // aggregating upstream (Upstream::OnStreamClose) sends the figures that gives.
  if (rank_) jobs_.Detach(job_id_, rank_, said_goodbye_, now);
  if (sink_) sink_->OnClose();
}

}  // namespace gpuwatch::collector
