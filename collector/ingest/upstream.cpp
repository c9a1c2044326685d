#include "ingest/upstream.h"

#include <netdb.h>
#include <poll.h>
#include <sys/epoll.h>

#include <cstring>
#include <vector>

#include <spdlog/spdlog.h>

#include "ingest/clock_shift.h"
#include "frame.h"
#include "common/format.h"

namespace gpuwatch::collector {

// What a Connection holds: forwards to its stream, by id, so a stream may outlive it (its
// queue still draining to the root) and the Upstream owns every socket.
class Upstream::Sink : public FrameSink {
 public:
  Sink(Upstream* up, uint64_t id) : up_(up), id_(id) {}
  void OnFrame(const wire::Frame& frame, std::string_view raw) override {
    up_->OnStreamFrame(id_, frame, raw);
  }
  void OnClose() override { up_->OnStreamClose(id_); }

 private:
  Upstream* up_;
  uint64_t id_;
};

Upstream::Upstream(UpstreamOptions opt, int epoll_fd) : opt_(std::move(opt)), epoll_fd_(epoll_fd) {}

Upstream::~Upstream() {
  // Links close themselves; say what never reached the root, once.
  uint64_t lost_ranks = 0;
  for (const auto& [id, s] : streams_) lost_ranks += s.have_hello && (s.dead || !s.link->open());
  if (frames_dropped_ > 0 || lost_ranks > 0)
    spdlog::warn("{}: {} frame(s) were not forwarded; {} rank(s) incomplete at the root", Name(),
                 frames_dropped_, lost_ranks);
}

std::string Upstream::Name() const { return "upstream tcp://" + wire::FormatHostPort(opt_.root); }

uint64_t Upstream::LocalNs() const {
  return static_cast<uint64_t>(MonotonicNs()) + static_cast<uint64_t>(opt_.test_skew_ns);
}

bool Upstream::Start(std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(opt_.root.port);
  if (const int rc = getaddrinfo(opt_.root.host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    *error = Name() + ": " + gai_strerror(rc);
    return false;
  }
  std::memcpy(&addr_, res->ai_addr, res->ai_addrlen);
  addr_len_ = res->ai_addrlen;
  freeaddrinfo(res);
  started_ = true;
  ConnectClock();
  return true;
}

std::unique_ptr<FrameSink> Upstream::NewStream() {
  const uint64_t id = next_id_++;
  Stream& s = streams_[id];
  s.link = std::make_unique<OutLink>(epoll_fd_, opt_.queue_bytes);
  // No root will ever take it: the rank is not forwarded (said already).
  s.dead = !started_ || refused_;
  return std::make_unique<Sink>(this, id);
}

// ---- the clock connection ----

void Upstream::ConnectClock() {
  clock_link_ = std::make_unique<OutLink>(epoll_fd_, 64 * 1024);
  clock_reader_ = wire::FrameReader();
  probe_out_ = false;
  answers_ = 0;
  burst_sent_ = 0;
  if (!clock_link_->Connect(addr_, addr_len_)) {
    ClockDown(clock_link_->error(), false);
    return;
  }
  fds_[clock_link_->fd()] = 0;
  connect_deadline_ = Clock::now() + opt_.timeout;
}

void Upstream::OnClockEvent(uint32_t events) {
  const int fd = clock_link_->fd();
  const bool was_open = clock_link_->open();
  std::string in;
  clock_link_->OnEvent(events, &in);
  if (clock_link_->state() == OutLink::State::kClosed) {
    fds_.erase(fd);
    // Opened, asked, and closed without one answer: the root refused us (its log says
    // why: a wrong token, another protocol). Asking again would only repeat its line.
    ClockDown(clock_link_->error(), was_open && answers_ == 0);
    return;
  }
  if (!was_open && clock_link_->open()) SendProbe();
  clock_reader_.Feed(in);
  wire::Frame f;
  for (;;) {
    const auto st = clock_reader_.Next(f);
    if (st == wire::FrameReader::Status::kNeedMore) break;
    if (st == wire::FrameReader::Status::kError) {
      clock_link_->Close("");
      fds_.erase(fd);
      ClockDown("bad answer to a clock probe: " + clock_reader_.error(), false);
      return;
    }
    if (f.body_case() != wire::Frame::kClockProbe || !probe_out_ ||
        f.clock_probe().sent_ns() != probe_sent_ns_)
      continue;  // a late answer to a probe already given up on
    estimator_.Add(probe_sent_ns_, f.clock_probe().root_ns(), LocalNs());
    probe_out_ = false;
    ++answers_;
    if (burst_sent_ < opt_.probes) SendProbe();
    else EndBurst();
  }
}

void Upstream::SendProbe() {
  wire::Frame f;
  wire::ClockProbe& p = *f.mutable_clock_probe();
  if (answers_ == 0 && burst_sent_ == 0) {  // the first of the connection says who we are
    p.set_token(opt_.token);
    p.set_protocol_version(wire::PROTOCOL_VERSION);
    p.set_host(opt_.via);
  }
  probe_sent_ns_ = LocalNs();
  p.set_sent_ns(probe_sent_ns_);
  std::string bytes;
  wire::AppendFrame(f, bytes);
  clock_link_->Send(bytes);
  probe_out_ = true;
  ++burst_sent_;
  probe_deadline_ = Clock::now() + opt_.timeout;
}

void Upstream::EndBurst() {
  const bool first = !estimator_.estimate().has_value() || said_down_;
  const int n = estimator_.burst_samples();
  estimator_.FinishBurst();
  burst_sent_ = 0;
  next_burst_ = Clock::now() + opt_.resync;
  const auto est = estimator_.estimate();
  if (!est) return;
  if (first)
    spdlog::info("{}: forwarding every rank ({}); root clock {} ms \u00b1 {} from this host's (best of {} probes)",
                 Name(), opt_.raw ? "every frame" : "their figures", Printf("%+.3f", est->offset_ns / 1e6), FmtDuration(est->rtt_ns / 2e9), n);
  said_down_ = false;
  for (auto& [id, s] : streams_)
    if (!s.dead && s.have_hello && s.link->state() == OutLink::State::kIdle) LinkStream(id, s);
}

void Upstream::ClockDown(const std::string& why, bool refused) {
  probe_out_ = false;
  if (refused) {
    refused_ = true;
    spdlog::warn("{}: the root collector refused this collector ({}; a wrong or missing job "
                 "token? its log says why): not forwarding, carrying on locally",
                 Name(), why);
    said_down_ = true;
  } else {
    Say(Name() + ": cannot reach the root collector (" + why +
        "): carrying on locally, trying again every " +
        std::to_string(opt_.retry.count() / 1000) + " s");
  }
  next_retry_ = Clock::now() + opt_.retry;
  // Without an estimate no rank can go up: those waiting for one are not forwarded.
  if (refused_ || !estimator_.estimate())
    for (auto& [id, s] : streams_)
      if (!s.dead && s.link->state() == OutLink::State::kIdle) KillStream(s, why);
  RetireFinished();
}

void Upstream::Say(const std::string& line) {
  if (said_down_) return;
  said_down_ = true;
  spdlog::warn("{}", line);
}

// ---- rank streams ----

void Upstream::LinkStream(uint64_t id, Stream& s) {
  const ClockSample est = *estimator_.estimate();
  wire::Frame f;
  wire::Hello& h = *f.mutable_hello() = s.hello;
  h.set_token(opt_.token);
  // A rank forwarded to us by another collector already carries its offset onto our
  // clock: the sum takes it onto the root's.
  h.set_clock_offset_ns(h.clock_offset_ns() + est.offset_ns);
  h.set_clock_rtt_ns(h.clock_rtt_ns() + est.rtt_ns);
  if (h.via_collector().empty()) h.set_via_collector(opt_.via);
  if (!s.relay) {
    h.set_upstream_digests(true);
    h.set_trace_at(opt_.via + ":" + (opt_.trace_dir.empty() ? h.out_dir() : opt_.trace_dir));
  }
  ShiftHello(h, opt_.test_skew_ns);
  std::string bytes;
  wire::AppendFrame(f, bytes);
  s.link->SendFirst(std::move(bytes));
  if (!s.link->Connect(addr_, addr_len_)) {
    KillStream(s, s.link->error());
    return;
  }
  fds_[s.link->fd()] = id;
  s.connect_by = Clock::now() + opt_.timeout;
  if (s.relink) {  // again after a lost link: what the new peer has not seen
    s.relink = false;
    SendDigest(s, s.local_closed);
    if (!s.goodbye.empty() && !s.link->Send(s.goodbye)) Drop(s);
  }
}

void Upstream::OnStreamFrame(uint64_t id, const wire::Frame& frame, std::string_view raw) {
  auto it = streams_.find(id);
  if (it == streams_.end()) return;
  Stream& s = it->second;
  if (s.dead) {
    ++s.dropped;
    ++frames_dropped_;
    return;
  }
  if (frame.body_case() == wire::Frame::kHello) {
    s.hello = frame.hello();
    s.have_hello = true;
    s.relay = opt_.raw || s.hello.upstream_digests() || !opt_.digest_of;
    s.next_digest = Clock::now() + opt_.digest_every;
    if (estimator_.estimate()) LinkStream(id, s);
    return;
  }
  if (!s.relay && frame.body_case() == wire::Frame::kBatch) {
    ++batches_aggregated_;  // in the figures the digests carry
    return;
  }
  if (!s.relay && frame.body_case() == wire::Frame::kGoodbye) {
    wire::Frame shifted = frame;
    ShiftFrame(shifted, opt_.test_skew_ns);
    wire::AppendFrame(shifted, s.goodbye);
  }
  bool queued;
  if (opt_.test_skew_ns == 0) {
    queued = s.link->Send(raw);  // the common case: the bytes as they came
  } else {
    wire::Frame shifted = frame;
    ShiftFrame(shifted, opt_.test_skew_ns);
    std::string bytes;
    wire::AppendFrame(shifted, bytes);
    queued = s.link->Send(bytes);
  }
  if (!queued) Drop(s);
}

void Upstream::SendDigest(Stream& s, bool final) {
  std::optional<wire::RankDigest> d = opt_.digest_of(s.hello);
  if (!d) return;
  const auto now = Clock::now();
  wire::Frame f;
  *f.mutable_rank_digest() = std::move(*d);
  f.mutable_rank_digest()->set_final(final);
  if (opt_.test_skew_ns != 0) ShiftFrame(f, opt_.test_skew_ns);
  std::string bytes;
  wire::AppendFrame(f, bytes);
  // The next one no sooner than the byte budget allows: a rank with many steps (a large
  // digest) is updated less often, never sends more.
  const auto budget = std::chrono::milliseconds(
      static_cast<int64_t>(1000.0 * static_cast<double>(bytes.size()) / static_cast<double>(opt_.digest_bytes_per_s)));
  s.next_digest = now + std::max<Clock::duration>(opt_.digest_every, budget);
  if (s.link->Send(bytes)) ++digests_sent_;
  else Drop(s);
}

void Upstream::Drop(Stream& s) {
  ++s.dropped;
  ++frames_dropped_;
  if (said_drop_) return;
  said_drop_ = true;
  spdlog::warn("{}: rank {}'s queue to the root collector is full ({}): the root takes frames "
               "slower than they come; dropping them (counted, said again at exit)",
               Name(), s.hello.rank(), FmtBytes(opt_.queue_bytes));
}

void Upstream::KillStream(Stream& s, const std::string& why) {
  if (s.link->fd() >= 0) fds_.erase(s.link->fd());
  const bool had_root = s.link->state() != OutLink::State::kIdle;
  s.link->Close(why);
  if (had_root && !s.relay && s.have_hello && !refused_) {
    // Figures replace each other: a new link later loses nothing (EndBurst links it).
    s.link = std::make_unique<OutLink>(epoll_fd_, opt_.queue_bytes);
    s.relink = true;
    s.relink_at = Clock::now() + opt_.retry;
    Say(Name() + ": lost the root collector (" + why +
        "): its ranks' figures go up again once it is back; carrying on locally");
    return;
  }
  s.dead = true;
  if (had_root)
    Say(Name() + ": lost the root collector (" + why +
        "): its ranks are no longer forwarded; carrying on locally");
}

void Upstream::OnStreamClose(uint64_t id) {
  auto it = streams_.find(id);
  if (it == streams_.end()) return;
  Stream& s = it->second;
  // The rank's figures once it has ended here (Connection::Close detached it first).
  if (!s.relay && s.have_hello && !s.dead) SendDigest(s, true);
  s.local_closed = true;
  RetireFinished();
}

void Upstream::RetireFinished() {
  for (auto it = streams_.begin(); it != streams_.end();) {
    Stream& s = it->second;
    const bool sent_all = s.link->open() && s.link->queued() == 0;
    if (s.local_closed && (s.dead || !s.have_hello || sent_all)) {
      // Closing after the last byte went into the kernel: it still delivers them, then FIN.
      if (s.link->fd() >= 0) fds_.erase(s.link->fd());
      it = streams_.erase(it);
    } else {
      ++it;
    }
  }
}

// ---- the loop's side ----

void Upstream::OnEvent(int fd, uint32_t events) {
  auto f = fds_.find(fd);
  if (f == fds_.end()) return;
  const uint64_t id = f->second;
  if (id == 0) {
    OnClockEvent(events);
    return;
  }
  auto it = streams_.find(id);
  if (it == streams_.end()) return;
  Stream& s = it->second;
  s.link->OnEvent(events, nullptr);
  if (s.link->state() == OutLink::State::kClosed) {
    fds_.erase(fd);
    KillStream(s, s.link->error());
  }
  RetireFinished();
}

void Upstream::Tick() {
  if (!started_) return;
  const auto now = Clock::now();
  for (auto& [id, s] : streams_) {
    if (s.link->state() == OutLink::State::kConnecting && now >= s.connect_by)
      KillStream(s, "connect timed out");
    // A running rank's figures, while the previous ones have left (no pile-up behind a
    // slow root).
    if (!s.relay && s.have_hello && !s.dead && !s.local_closed && now >= s.next_digest &&
        s.link->queued() == 0)
      SendDigest(s, false);
    // A stream that lost its link while the root still answers probes (a connect that
    // timed out, say): again after `retry`. With the clock down, EndBurst links it.
    if (s.relink && !s.dead && s.link->state() == OutLink::State::kIdle && now >= s.relink_at &&
        clock_link_ && clock_link_->open() && estimator_.estimate())
      LinkStream(id, s);
  }
  const bool clock_alive = clock_link_ && clock_link_->state() != OutLink::State::kClosed;
  if (clock_alive && clock_link_->state() == OutLink::State::kConnecting && now >= connect_deadline_) {
    fds_.erase(clock_link_->fd());
    clock_link_->Close("connect timed out");
    ClockDown("connect timed out", false);
  } else if (clock_alive && probe_out_ && now >= probe_deadline_) {
    probe_out_ = false;  // lost: count the burst as it is
    if (estimator_.burst_samples() > 0) {
      EndBurst();
    } else {
      fds_.erase(clock_link_->fd());
      clock_link_->Close("no answer to a clock probe");
      ClockDown("no answer to a clock probe within " + std::to_string(opt_.timeout.count()) + " ms",
                false);
    }
  } else if (clock_alive && clock_link_->open() && !probe_out_ && now >= next_burst_) {
    SendProbe();
  } else if (!clock_alive && !refused_ && now >= next_retry_) {
    ConnectClock();
  }
  RetireFinished();
}

Clock::time_point Upstream::NextWake() const {
  auto next = Clock::time_point::max();
  if (!started_) return next;
  for (const auto& [id, s] : streams_) {
    if (s.link->state() == OutLink::State::kConnecting) next = std::min(next, s.connect_by);
    if (!s.relay && s.have_hello && !s.dead && !s.local_closed) next = std::min(next, s.next_digest);
    if (s.relink && !s.dead && clock_link_ && clock_link_->open()) next = std::min(next, s.relink_at);
  }
  if (!clock_link_ || clock_link_->state() == OutLink::State::kClosed) {
    if (!refused_) next = std::min(next, next_retry_);
  } else if (clock_link_->state() == OutLink::State::kConnecting) {
    next = std::min(next, connect_deadline_);
  } else {
    next = std::min(next, probe_out_ ? probe_deadline_ : next_burst_);
  }
  return next;
}

void Upstream::SendFinalDigests() {
  for (auto& [id, s] : streams_)
    if (!s.relay && s.have_hello && !s.dead && !s.local_closed) {
      SendDigest(s, true);
      s.local_closed = true;  // nothing more comes from it here: no second final digest
    }
  RetireFinished();
}

void Upstream::Drain(std::chrono::milliseconds budget) {
  const auto deadline = Clock::now() + budget;
  for (;;) {
    std::vector<pollfd> pfds;
    for (const auto& [fd, id] : fds_) {
      if (id == 0) continue;  // the clock: nothing to deliver
      const Stream& s = streams_.at(id);
      if (s.link->queued() > 0 || s.link->state() == OutLink::State::kConnecting)
        pfds.push_back({fd, POLLOUT | POLLIN, 0});
    }
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (pfds.empty() || left <= 0) break;
    if (poll(pfds.data(), pfds.size(), static_cast<int>(left)) <= 0) continue;
    for (const pollfd& p : pfds) {
      if (!p.revents) continue;
      uint32_t ev = 0;
      if (p.revents & POLLIN) ev |= EPOLLIN;
      if (p.revents & POLLOUT) ev |= EPOLLOUT;
      if (p.revents & POLLERR) ev |= EPOLLERR;
      if (p.revents & POLLHUP) ev |= EPOLLHUP;
      OnEvent(p.fd, ev);
    }
  }
}

}  // namespace gpuwatch::collector
