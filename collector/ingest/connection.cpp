#include "ingest/connection.h"

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
  if (!rank_) return "client pid " + std::to_string(peer_pid_);
  return "rank " + std::to_string(rank_no_) + " of job " + job_id_ + " (pid " +
         std::to_string(peer_pid_) + ")";
}

bool Connection::Fail(std::string why) {
  error_ = std::move(why);
  return false;
}

bool Connection::OnBytes(std::string_view bytes, wire::Frame& scratch, Clock::time_point) {
  if (closed_) return false;
  reader_.Feed(bytes);
  for (;;) {
    switch (reader_.Next(scratch)) {
      case wire::FrameReader::Status::kNeedMore: return true;
      case wire::FrameReader::Status::kError: return Fail(reader_.error());
      case wire::FrameReader::Status::kFrame:
        if (!OnFrame(scratch)) return false;
        break;
    }
  }
}

bool Connection::OnFrame(const wire::Frame& frame) {
  if (!rank_) {
    if (frame.body_case() != wire::Frame::kHello)
      return Fail("first frame is not a Hello (the stream is not from libgpuwatch)");
    wire::Hello hello = frame.hello();
    SanitizeHello(hello);
    if (hello.protocol_version() != wire::PROTOCOL_VERSION)
      return Fail("rank " + std::to_string(hello.rank()) + " (pid " +
                  std::to_string(peer_pid_) + ") speaks protocol " +
                  std::to_string(hello.protocol_version()) + ", this collector speaks " +
                  std::to_string(wire::PROTOCOL_VERSION));
    std::string error;
    RankAggregate* rank = jobs_.Attach(hello, &error);
    if (!rank) return Fail(error);
    rank_ = rank;
    job_id_ = hello.job_id();
    rank_no_ = hello.rank();
    return true;
  }
  switch (frame.body_case()) {
    case wire::Frame::kBatch: rank_->OnBatch(frame.batch()); return true;
    case wire::Frame::kGoodbye:
      rank_->OnGoodbye(frame.goodbye());
      said_goodbye_ = true;
      return true;
    case wire::Frame::kHello: return Fail("second Hello on one connection");
    default: return true;  // a body this collector does not know: skip, stay compatible
  }
}

void Connection::Close(Clock::time_point now) {
  if (closed_) return;
  closed_ = true;
  if (rank_) jobs_.Detach(job_id_, rank_, said_goodbye_, now);
}

}  // namespace gpuwatch::collector
