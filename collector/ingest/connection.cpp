#include "ingest/connection.h"

#include "ingest/tcp_listener.h"
#include "report/writer.h"

namespace gpuwatch::collector {

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
  if (!rank_) return tcp ? "TCP peer " + tcp_address_ : "client pid " + std::to_string(peer_pid_);
  return "rank " + std::to_string(rank_no_) + " of job " + job_id_ + " (pid " +
         std::to_string(peer_pid_) + (tcp ? ", TCP " + tcp_address_ : "") + ")";
}

bool Connection::Fail(std::string why) {
  error_ = std::move(why);
  return false;
}

bool Connection::OnBytes(std::string_view bytes, wire::Frame& scratch, Clock::time_point now) {
  if (closed_) return false;
  reader_.Feed(bytes);
  bool ok = true;
  for (bool more = true; more && ok;) {
    switch (reader_.Next(scratch)) {
      case wire::FrameReader::Status::kNeedMore: more = false; break;
      case wire::FrameReader::Status::kError: ok = Fail(reader_.error()); break;
      case wire::FrameReader::Status::kFrame: ok = OnFrame(scratch, reader_.last_raw(), now); break;
    }
  }
  // One write per read: what this read completed is in the kernel before the next read.
  FlushJournal();
  return ok;
}

void Connection::OpenJournal() {
  if (!journal_opt_ || !journal_opt_->enabled || rank_->journal()) return;
  if (!rank_->storage().journal.error.empty()) return;  // failed before: said once already
  const Job* job = jobs_.Find(job_id_);
  const std::string dir = ChooseOutDir(journal_opt_->out_override, job ? job->first_out_dir() : "");
  std::string error;
  auto j = JournalWriter::Open(dir, rank_->hello().rank(), rank_->hello().pid(),
                               journal_opt_->max_bytes, &error);
  if (!j) {
    rank_->storage().journal.error = error;
    notices_.push_back(Describe() + ": not journaled: " + error);
    return;
  }
  rank_->set_journal(std::move(j));
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

bool Connection::OnFrame(const wire::Frame& frame, std::string_view raw, Clock::time_point now) {
  if (!rank_) {
    if (frame.body_case() != wire::Frame::kHello)
      return Fail("first frame is not a Hello (the stream is not from libgpuwatch)");
    if (!OnHello(frame.hello())) return false;
    if (JournalWriter* j = rank_->journal(); j && !frame.hello().token().empty()) {
      // The token is a secret: the journal gets the Hello without it.
      wire::Frame bare = frame;
      bare.mutable_hello()->clear_token();
      std::string bytes;
      wire::AppendFrame(bare, bytes);
      j->Add(bytes);
      return true;
    }
  } else {
    switch (frame.body_case()) {
      case wire::Frame::kBatch: rank_->OnBatch(frame.batch()); break;
      case wire::Frame::kGoodbye:
        rank_->OnGoodbye(frame.goodbye());
        said_goodbye_ = true;
        break;
      case wire::Frame::kHeartbeat: rank_->OnHeartbeat(frame.heartbeat(), now); break;
      case wire::Frame::kHello: return Fail("second Hello on one connection");
      default: break;  // a body this collector does not know: skip, stay compatible
    }
  }
  // Accepted: into the journal exactly as it arrived (a later report replays it).
  if (JournalWriter* j = rank_->journal()) j->Add(raw);
  return true;
}

bool Connection::OnHello(wire::Hello hello) {
  // Before anything else, so a peer without the token learns nothing and attaches nothing.
  if (token_) {
    if (hello.token().empty())
      return Fail("no job token in its Hello (a TCP peer must set GPUWATCH_TOKEN)");
    if (!TokenEquals(hello.token(), *token_)) return Fail("wrong job token (GPUWATCH_TOKEN)");
    peer_pid_ = hello.pid();  // TCP has no kernel-verified pid: the rank's word for it
  }
  hello.clear_token();  // never kept: not in the summary, the trace or the log
  SanitizeHello(hello);
  if (hello.protocol_version() != wire::PROTOCOL_VERSION)
    return Fail("rank " + std::to_string(hello.rank()) + " (pid " + std::to_string(peer_pid_) +
                ") speaks protocol " + std::to_string(hello.protocol_version()) +
                ", this collector speaks " + std::to_string(wire::PROTOCOL_VERSION));
  std::string error;
  RankAggregate* rank = jobs_.Attach(hello, &error);
  if (!rank) return Fail(error);
  rank_ = rank;
  job_id_ = hello.job_id();
  rank_no_ = hello.rank();
  OpenJournal();
  return true;
}

void Connection::Close(Clock::time_point now) {
  if (closed_) return;
  closed_ = true;
  FlushJournal();
  if (rank_) jobs_.Detach(job_id_, rank_, said_goodbye_, now);
}

}  // namespace gpuwatch::collector
