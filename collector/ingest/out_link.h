// One outgoing TCP connection driven by the collector's epoll thread (--upstream): a
// non-blocking connect, a bounded queue of bytes to send, writes only when the socket
// takes them. Nothing here ever blocks the loop: a slow or absent peer fills the queue,
// and Send() then refuses (the caller drops and counts).
#pragma once
#include <sys/socket.h>

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>

namespace gpuwatch::collector {

class OutLink {
 public:
  enum class State { kIdle, kConnecting, kOpen, kClosed };

  OutLink(int epoll_fd, size_t max_queued) : epoll_fd_(epoll_fd), max_queued_(max_queued) {}
  ~OutLink() { Close(""); }
  OutLink(const OutLink&) = delete;
  OutLink& operator=(const OutLink&) = delete;

  // Starts connecting to `addr` and registers the socket with the epoll set (its
  // data.fd is fd()). False when it failed at once (state kClosed, error() says why).
  bool Connect(const sockaddr_storage& addr, socklen_t len);
  // Queues `bytes` and writes what the socket takes now; bytes queued before Connect()
  // wait for it. False, nothing queued, when the queue cannot hold them or it is closed.
  bool Send(std::string_view bytes);
  // Puts `bytes` before everything queued (the Hello of a stream whose frames waited for
  // the clock estimate). Only before Connect(); never refused.
  void SendFirst(std::string bytes);
  // The socket's epoll events. Bytes read are appended to `in` (may be null: discarded).
  // May close the link (error() then says why: a refused connect, the peer's close, ...).
  void OnEvent(uint32_t events, std::string* in);
  // Stops at once: unsent bytes are lost. `why` becomes error() if none was set.
  void Close(const std::string& why);

  State state() const { return state_; }
  int fd() const { return fd_; }
  bool open() const { return state_ == State::kOpen; }
  size_t queued() const { return queued_; }
  const std::string& error() const { return error_; }

 private:
  void Flush();
  void Fail(const std::string& why);
  void Watch();  // epoll interest: write only while something waits to be written

  int epoll_fd_;
  size_t max_queued_;
  int fd_ = -1;
  State state_ = State::kIdle;
  std::deque<std::string> queue_;
  size_t front_sent_ = 0;  // bytes of queue_.front() already written
  size_t queued_ = 0;      // bytes in queue_ not yet written
  bool want_write_ = false;
  std::string error_;
};

}  // namespace gpuwatch::collector
