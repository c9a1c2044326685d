#include "service/server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "analyze/rank_digest.h"
#include "ingest/connection.h"
#include "ingest/listener.h"
#include "ingest/tcp_listener.h"

namespace gpuwatch::collector {
namespace {

constexpr size_t kChunk = 64 * 1024;
constexpr int kChunksPerWakeup = 4;

// Many ranks plus stragglers may be connected at once; the default soft limit of 1024
// descriptors is too low for "a thousand connections at once".
void RaiseFdLimit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

// The figures of the local rank that said `hello`, for the upstream (issue #21).
std::optional<wire::RankDigest> DigestOf(const JobTable& jobs, const wire::Hello& hello) {
  const Job* job = jobs.Find(hello.job_id());
  if (!job) return std::nullopt;
  wire::Hello key = hello;
  SanitizeHello(key);  // as the job table keyed it
  auto it = job->ranks().find(RankKey{key.rank(), key.host(), key.pid()});
  if (it == job->ranks().end()) return std::nullopt;
  wire::RankDigest d;
  d.set_format(kRankDigestFormat);
  d.set_result(EncodeRankResult(it->second->result()));
  return d;
}

}  // namespace

Server::Server(ServerOptions options, JobTable& jobs, JobEnd on_job_end)
    : opt_(std::move(options)), jobs_(jobs), on_job_end_(std::move(on_job_end)) {}

Server::~Server() {
  const auto now = Clock::now();
  while (!clients_.empty()) CloseClient(clients_.begin()->first, now);
  upstream_.reset();  // after the clients: their sinks point into it
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    unlink(opt_.listen_path.c_str());
  }
  if (tcp_fd_ >= 0) close(tcp_fd_);
  if (signal_fd_ >= 0) close(signal_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
  if (epoll_fd_ >= 0) close(epoll_fd_);
}

bool Server::Start(std::string* error) {
  RaiseFdLimit();
  // Clients may vanish while we write to stdout or a socket: an error, not a death.
  signal(SIGPIPE, SIG_IGN);

  // SIGINT/SIGTERM arrive as readable data in the loop, so the summary is written from
  // ordinary code, not from a signal handler.
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  if (opt_.handle_signals && (sigprocmask(SIG_BLOCK, &mask, nullptr) != 0 ||
                              (signal_fd_ = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC)) < 0)) {
    *error = std::string("signalfd: ") + std::strerror(errno);
    return false;
  }
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) {
    *error = std::string("eventfd: ") + std::strerror(errno);
    return false;
  }

  if (opt_.listen_tcp && opt_.token.empty()) {
    *error = "--listen-tcp needs the job token: pass --token or set GPUWATCH_TOKEN";
    return false;
  }
  listen_fd_ = ListenUnix(opt_.listen_path, error);
  if (listen_fd_ < 0) return false;
  if (opt_.listen_tcp) {
    tcp_fd_ = ListenTcp(*opt_.listen_tcp, &tcp_address_, error);
    if (tcp_fd_ < 0) return false;
  }

  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) {
    *error = std::string("epoll_create1: ") + std::strerror(errno);
    return false;
  }
  for (int fd : {listen_fd_, signal_fd_, wake_fd_, tcp_fd_}) {
    if (fd < 0) continue;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      *error = std::string("epoll_ctl: ") + std::strerror(errno);
      return false;
    }
  }
  if (opt_.upstream) {
    UpstreamOptions up = *opt_.upstream;
    if (!up.raw) up.digest_of = [this](const wire::Hello& h) { return DigestOf(jobs_, h); };
    upstream_ = std::make_unique<Upstream>(std::move(up), epoll_fd_);
    if (!upstream_->Start(error)) {
      // Forwarding is extra: this host's own summary does not depend on it.
      spdlog::warn("{}: not forwarding, carrying on locally", *error);
      upstream_.reset();
    }
  }
  started_ = last_activity_ = next_tick_ = Clock::now();
  return true;
}

void Server::RequestStop() {
  const uint64_t one = 1;
  if (wake_fd_ >= 0 && write(wake_fd_, &one, sizeof one) < 0) {
    // The counter cannot overflow from a few requests; nothing else can fail here.
  }
}

void Server::Run() {
  epoll_event events[64];
  while (!stop_) {
    const int n = epoll_wait(epoll_fd_, events, 64, TimeoutMs(Clock::now()));
    if (n < 0 && errno != EINTR) {
      spdlog::error("epoll_wait: {}; stopping", std::strerror(errno));
      break;
    }
    const auto now = Clock::now();
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == listen_fd_ || fd == tcp_fd_) {
        Accept(fd, now);
      } else if (fd == signal_fd_) {
        signalfd_siginfo si{};
        if (read(signal_fd_, &si, sizeof si) == sizeof si) {
          spdlog::info("{} received: writing the summaries and stopping",
                       si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM");
          stop_ = true;
        }
      } else if (fd == wake_fd_) {
        stop_ = true;
      } else if (clients_.count(fd)) {
        Read(fd, kChunksPerWakeup, now);
      } else if (upstream_ && upstream_->Owns(fd)) {
        upstream_->OnEvent(fd, events[i].events);
      }
    }
    if (upstream_) upstream_->Tick();
    DropSilentClients(now);
    // At once in the log; the job's summary lists them too, even if the job is then killed.
    for (const std::string& line : jobs_.CheckHangs(now)) spdlog::error("{}", line);
    FinishDueJobs(now);
    if (opt_.on_tick && now >= next_tick_) {
      opt_.on_tick(jobs_, now);
      // A snapshot passes over every rank's analyses (about 5 ms a rank, mostly the steps
      // analysis): with many ranks, tick less often rather than take more than 1/20 of
      // the thread that reads the sockets.
      const auto cost = Clock::now() - now;
      next_tick_ = now + std::max<Clock::duration>(opt_.tick_interval, cost * 20);
    }
    if (ShouldExit(now)) break;
  }

  // Stopping. Take in what clients already sent (connections still in the backlog included,
  // their data is in our socket buffers), then write
  // every job that has data not yet in a summary; ranks still connected are abnormal.
  auto now = Clock::now();
  Accept(listen_fd_, now);
  if (tcp_fd_ >= 0) Accept(tcp_fd_, now);
  std::vector<int> fds;
  for (const auto& [fd, c] : clients_) fds.push_back(fd);
  for (int fd : fds)
    if (clients_.count(fd)) Read(fd, 1 << 10, now);
  for (const std::string& line : jobs_.CheckHangs(now)) spdlog::error("{}", line);
  for (Job* job : jobs_.Unwritten()) {
    on_job_end_(*job);
    jobs_.MarkWritten(job);
  }
  if (opt_.on_tick) opt_.on_tick(jobs_, Clock::now());  // live views end on final figures
  // What the ranks sent last is still queued for the root, and the ranks still connected
  // have their final figures to send: a bounded wait, the summaries are already written.
  if (upstream_) {
    upstream_->SendFinalDigests();
    upstream_->Drain(std::chrono::milliseconds(2000));
  }
}

void Server::Accept(int listen_fd, Clock::time_point now) {
  const bool tcp = listen_fd == tcp_fd_;
  for (;;) {
    const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        spdlog::warn("accept: {}", std::strerror(errno));
      return;
    }
    if (tcp) {
      // No credentials to check: the peer proves itself with the token in its Hello
      // (Connection), and until then it is a silent client like any other.
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      auto conn = std::make_unique<Connection>(0, jobs_, now, &opt_.journal);
      conn->RequireToken(&opt_.token, TcpPeerAddress(fd));
      if (upstream_) conn->ForwardTo(upstream_->NewStream());
      AddClient(fd, std::move(conn), now);
      continue;
    }
    Peer peer;
    if (!PeerOf(fd, &peer)) {
      spdlog::warn("refused a connection: cannot read its credentials ({})",
                   std::strerror(errno));
      close(fd);
      continue;
    }
    if (!PeerAllowed(peer, geteuid())) {
      spdlog::warn("refused a connection from uid {} (pid {}): only uid {} may connect",
                   peer.uid, peer.pid, geteuid());
      close(fd);
      continue;
    }
    auto conn = std::make_unique<Connection>(peer.pid, jobs_, now, &opt_.journal);
    if (upstream_) conn->ForwardTo(upstream_->NewStream());
    AddClient(fd, std::move(conn), now);
  }
}

bool Server::AddClient(int fd, std::unique_ptr<Connection> conn, Clock::time_point now) {
  conn->MeasureCollectorCpu();
  if (clients_.size() >= opt_.max_connections) {
    spdlog::warn("refused {}: already serving {} connections", conn->Describe(), clients_.size());
    close(fd);
    return false;
  }
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.fd = fd;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    spdlog::warn("refused {}: epoll_ctl: {}", conn->Describe(), std::strerror(errno));
    close(fd);
    return false;
  }
  clients_.emplace(fd, Client{fd, std::move(conn)});
  served_any_ = true;
  last_activity_ = now;
  client_count_.store(clients_.size(), std::memory_order_relaxed);
  return true;
}

void Server::Read(int fd, int max_chunks, Clock::time_point now) {
  char buf[kChunk];
  for (int i = 0; i < max_chunks; ++i) {
    Client& c = clients_.at(fd);
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      Drop(fd, std::string("read: ") + std::strerror(errno), now);
      return;
    }
    if (n == 0) {
      if (c.conn->has_hello() && !c.conn->said_goodbye())
        spdlog::warn("{} disconnected without a Goodbye: marked as ended abnormally",
                     c.conn->Describe());
      CloseClient(fd, now);
      return;
    }
    const bool ok = c.conn->OnBytes(std::string_view(buf, static_cast<size_t>(n)), scratch_, now);
    LogNotices(*c.conn);
    SendReplies(fd, *c.conn);
    if (!ok) {
      Drop(fd, c.conn->error(), now);
      return;
    }
    const size_t held = c.conn->buffered();
    buffered_ = buffered_ - c.held + held;
    c.held = held;
    if (buffered_ > opt_.max_buffered_bytes) {
      Drop(fd, "collector's buffer budget of " + std::to_string(opt_.max_buffered_bytes) +
                   " bytes for partial frames is exhausted",
           now);
      return;
    }
    if (static_cast<size_t>(n) < sizeof buf) return;  // drained for now
  }
}

void Server::Drop(int fd, const std::string& why, Clock::time_point now) {
  auto it = clients_.find(fd);
  if (it == clients_.end()) return;
  spdlog::warn("dropped {}: {}", it->second.conn->Describe(), why);
  CloseClient(fd, now);
}

void Server::CloseClient(int fd, Clock::time_point now) {
  auto it = clients_.find(fd);
  if (it == clients_.end()) return;
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  close(fd);
  it->second.conn->Close(now);
  LogNotices(*it->second.conn);
  buffered_ -= it->second.held;
  clients_.erase(it);
  client_count_.store(clients_.size(), std::memory_order_relaxed);
  last_activity_ = now;
}

void Server::LogNotices(Connection& conn) {
  for (const std::string& n : conn.TakeNotices()) spdlog::warn("{}", n);
}

void Server::SendReplies(int fd, Connection& conn) {
  // Answers to clock probes: a few dozen bytes, one at a time per prober. If the socket
  // cannot take them now the answer is lost, and the prober times that probe out.
  const std::string r = conn.TakeReplies();
  if (!r.empty() && send(fd, r.data(), r.size(), MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
    // Nothing to do: see above.
  }
}

void Server::DropSilentClients(Clock::time_point now) {
  std::vector<int> silent;
  for (const auto& [fd, c] : clients_)
    if (!c.conn->identified() && now - c.conn->connected_at() >= opt_.hello_timeout)
      silent.push_back(fd);
  for (int fd : silent)
    Drop(fd,
         "no Hello within " + std::to_string(opt_.hello_timeout.count()) + " ms of connecting",
         now);
}

void Server::FinishDueJobs(Clock::time_point now) {
  for (Job* job : jobs_.Due(now)) {
    on_job_end_(*job);
    jobs_.MarkWritten(job);
  }
}

bool Server::ShouldExit(Clock::time_point now) const {
  if (!opt_.autostart || !clients_.empty() || !jobs_.AllWritten()) return false;
  if (!served_any_) return now - started_ >= opt_.idle_exit;
  return now - last_activity_ >= opt_.linger;
}

int Server::TimeoutMs(Clock::time_point now) const {
  // Wake for the earliest of: a job's end, a silent client's Hello deadline, autostart exit.
  Clock::time_point next = now + std::chrono::seconds(1);
  if (auto d = jobs_.NextDeadline()) next = std::min(next, *d);
  for (const auto& [fd, c] : clients_)
    if (!c.conn->identified()) next = std::min(next, c.conn->connected_at() + opt_.hello_timeout);
  if (upstream_) next = std::min(next, upstream_->NextWake());
  if (opt_.on_tick) next = std::min(next, next_tick_);
  if (opt_.autostart && clients_.empty())
    next = std::min(next, (served_any_ ? last_activity_ + opt_.linger : started_ + opt_.idle_exit));
  if (next <= now) return 0;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
  return static_cast<int>(ms);
}

}  // namespace gpuwatch::collector
