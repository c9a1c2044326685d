// --upstream tcp://HOST:PORT: a host collector also forwards every local rank to a root
// collector, which writes the job-wide summary and trace (issue #9, multi-host).
//
// - Clock: one connection of its own sends bursts of ClockProbes (the first carries the
//   job token) and keeps the best of each burst (clock/clock_estimate.h). One estimate per
//   host, not per rank: ranks of one host share a clock, and per-rank estimates would
//   pull them apart by their different errors. A burst again every `resync` follows drift;
//   a rank keeps the estimate it was forwarded with (one shift per rank keeps its own
//   timeline intact).
// - Ranks: each local connection gets one TCP connection to the root, opened once the
//   clock is known. It sends the rank's Hello (the job token, the offset and its round
//   trip, this host's name added) and then every frame this collector accepted from the
//   rank, unchanged.
// - Never in the way: everything runs on the server's epoll thread without blocking
//   (out_link.h); a rank's queue holds at most `queue_bytes`, past it frames are dropped
//   and counted; an unreachable or refusing root is said once in the log and the host
//   collector carries on with its own summary as without --upstream.
#pragma once
#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "ingest/clock_estimate.h"
#include "endpoint.h"
#include "frame.h"
#include "ingest/connection.h"
#include "ingest/out_link.h"

namespace gpuwatch::collector {

struct UpstreamOptions {
  wire::HostPort root;
  std::string token;  // the root's job token (--token / GPUWATCH_TOKEN)
  std::string via;    // this collector's host name, for the root's summary
  size_t queue_bytes = size_t{8} << 20;  // per rank, as the library's GPUWATCH_BUFFER_BYTES
  int probes = 8;                        // per burst
  std::chrono::milliseconds resync{30000};
  std::chrono::milliseconds retry{5000};  // reconnect the clock after the root went away
  std::chrono::milliseconds timeout{3000};  // for a connect, and for a probe's answer
  // GPUWATCH_TEST_CLOCK_SKEW_NS (tests only): act as if this host's clock were ahead by
  // this much: added to the clock read for probes and to every time forwarded.
  int64_t test_skew_ns = 0;
};

class Upstream {
 public:
  Upstream(UpstreamOptions opt, int epoll_fd);
  ~Upstream();
  Upstream(const Upstream&) = delete;
  Upstream& operator=(const Upstream&) = delete;

  // Resolves the root's address (once: a lookup may block) and starts the clock
  // connection. False with `error` when the name does not resolve.
  bool Start(std::string* error);
  // A sink for one local connection (Connection::ForwardTo).
  std::unique_ptr<FrameSink> NewStream();
  // The fd is one of ours (the server's loop hands us its events).
  bool Owns(int fd) const { return fds_.count(fd) != 0; }
  void OnEvent(int fd, uint32_t events);
  // Timeouts, probe bursts, reconnects; call every loop iteration.
  void Tick();
  // When Tick() next has something to do.
  Clock::time_point NextWake() const;
  // The collector is stopping: sends what is queued for up to `budget`, then closes.
  void Drain(std::chrono::milliseconds budget);

  std::optional<ClockSample> clock() const { return estimator_.estimate(); }
  uint64_t frames_dropped() const { return frames_dropped_; }

 private:
  class Sink;
  struct Stream {
    std::unique_ptr<OutLink> link;
    wire::Hello hello;       // as the rank sent it
    bool have_hello = false;
    bool local_closed = false;
    bool dead = false;       // its link failed: nothing more goes to the root
    uint64_t dropped = 0;    // frames not forwarded
    Clock::time_point connect_by{};
  };
  void OnStreamFrame(uint64_t id, const wire::Frame& frame, std::string_view raw);
  void OnStreamClose(uint64_t id);
  void LinkStream(uint64_t id, Stream& s);
  void Drop(Stream& s);
  void KillStream(Stream& s, const std::string& why);
  void RetireFinished();
  void ConnectClock();
  void OnClockEvent(uint32_t events);
  void SendProbe();
  void EndBurst();
  void ClockDown(const std::string& why, bool refused);
  void Say(const std::string& line);  // warn once per outage
  uint64_t LocalNs() const;
  std::string Name() const;

  UpstreamOptions opt_;
  int epoll_fd_;
  sockaddr_storage addr_{};
  socklen_t addr_len_ = 0;
  bool started_ = false;
  bool refused_ = false;  // the root closed the clock connection unanswered: never retry
  bool said_down_ = false;

  std::unique_ptr<OutLink> clock_link_;
  wire::FrameReader clock_reader_;
  ClockEstimator estimator_;
  bool probe_out_ = false;
  uint64_t probe_sent_ns_ = 0;
  int answers_ = 0;     // on the current clock connection
  int burst_sent_ = 0;
  Clock::time_point probe_deadline_{}, connect_deadline_{}, next_burst_{}, next_retry_{};

  uint64_t next_id_ = 1;
  std::map<uint64_t, Stream> streams_;
  std::map<int, uint64_t> fds_;  // fd -> stream id; 0: the clock connection
  uint64_t frames_dropped_ = 0;
  bool said_drop_ = false;
};

}  // namespace gpuwatch::collector
