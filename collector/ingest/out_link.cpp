#include "ingest/out_link.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ingest/tcp_listener.h"

namespace gpuwatch::collector {

bool OutLink::Connect(const sockaddr_storage& addr, socklen_t len) {
  fd_ = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    Fail(std::string("socket: ") + std::strerror(errno));
    return false;
  }
  const int one = 1, buf = kTcpSocketBuffer;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // probes must not wait
  setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
  if (connect(fd_, reinterpret_cast<const sockaddr*>(&addr), len) != 0 && errno != EINPROGRESS) {
    Fail(std::strerror(errno));
    return false;
  }
  state_ = State::kConnecting;
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP;
  ev.data.fd = fd_;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd_, &ev) != 0) {
    Fail(std::string("epoll_ctl: ") + std::strerror(errno));
    return false;
  }
  want_write_ = true;
  return true;
}

bool OutLink::Send(std::string_view bytes) {
  if (state_ == State::kClosed || queued_ + bytes.size() > max_queued_) return false;
  queue_.emplace_back(bytes);
  queued_ += bytes.size();
  if (state_ == State::kOpen) Flush();
  return true;
}

void OutLink::SendFirst(std::string bytes) {
  if (state_ != State::kIdle) return;
  queued_ += bytes.size();
  queue_.push_front(std::move(bytes));
}

void OutLink::OnEvent(uint32_t events, std::string* in) {
  if (fd_ < 0) return;
  if (state_ == State::kConnecting) {
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err != 0) {
      Fail(std::strerror(err));
      return;
    }
    if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) return;
    state_ = State::kOpen;
  }
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
    char buf[16 * 1024];
    for (;;) {
      const ssize_t n = read(fd_, buf, sizeof buf);
      if (n > 0) {
        if (in) in->append(buf, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      Fail(n == 0 ? "the root collector closed the connection" : std::strerror(errno));
      return;
    }
  }
  Flush();
}

void OutLink::Flush() {
  while (state_ == State::kOpen && !queue_.empty()) {
    const std::string& front = queue_.front();
    const ssize_t n = send(fd_, front.data() + front_sent_, front.size() - front_sent_,
                           MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      Fail(std::strerror(errno));
      return;
    }
    front_sent_ += static_cast<size_t>(n);
    queued_ -= static_cast<size_t>(n);
    if (front_sent_ == front.size()) {
      queue_.pop_front();
      front_sent_ = 0;
    }
  }
  Watch();
}

void OutLink::Watch() {
  const bool want = state_ == State::kConnecting || !queue_.empty();
  if (fd_ < 0 || want == want_write_) return;
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP | (want ? EPOLLOUT : 0u);
  ev.data.fd = fd_;
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd_, &ev);
  want_write_ = want;
}

void OutLink::Fail(const std::string& why) {
  if (error_.empty()) error_ = why;
  Close(why);
}

void OutLink::Close(const std::string& why) {
  if (error_.empty()) error_ = why;
  if (fd_ >= 0) {
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd_, nullptr);
    close(fd_);
    fd_ = -1;
  }
  state_ = State::kClosed;
  queue_.clear();
  queued_ = 0;
  front_sent_ = 0;
}

}  // namespace gpuwatch::collector
