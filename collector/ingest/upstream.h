// --upstream tcp://HOST:PORT: a host collector also sends every local rank to a root
// collector, which writes the job-wide summary (issue #9, multi-host; #21, at scale).
//
// - What goes up (issue #21): by default the rank's figures, not its events. The host
//   collector interprets and analyzes its ranks as without --upstream; per rank it sends
//   the Hello (marked upstream_digests, with where the trace is), the heartbeats and the
//   Goodbye as the rank sent them (hang detection and the rank's end), and a RankDigest
//   (its RankResult: analyze/rank_digest.h) every `digest_every` while the rank runs and
//   once more when its last connection closes, or when this collector stops while the rank
//   is still connected (SendFinalDigests). The Batches stay here: what goes up per
//   rank is bounded by the digest's size and rate, whatever the rank's launch rate.
//   With `raw` (--upstream-raw) every frame goes up unchanged, as before #21, and the
//   root interprets everything. A rank that arrives already as digests (this collector is
//   an intermediate of a tree) goes up unchanged either way: the root needs each rank's
//   own figures (summary.json's ranks[]), so digests are relayed, never merged on the way.
// - A lost root (or intermediate): a rank sent as figures loses nothing, as each digest
//   replaces the one before. Its stream waits for the clock connection to come back (tried
//   every `retry`), then connects again with the Hello, the latest figures and, if the
//   rank has ended, its Goodbye. A rank forwarded raw cannot be resumed (its events in
//   between are gone): it stays local, as before.
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
#include <functional>
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
  // Forward every frame unchanged (--upstream-raw) instead of the ranks' figures.
  bool raw = false;
  // The figures of the local rank that said `hello` (result and format set), as the layer
  // that holds them computes them; nullopt when it has none. Set unless `raw`.
  std::function<std::optional<wire::RankDigest>(const wire::Hello& hello)> digest_of;
  std::chrono::milliseconds digest_every{5000};
  // A running rank's digests take at most this many bytes a second (a large one waits
  // longer for the next); the final one always goes.
  size_t digest_bytes_per_s = 32 * 1024;
  std::string trace_dir;  // where this collector writes traces ("" : each job's out_dir)
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
  // The collector is stopping (SIGTERM, the end of `gpuwatch run`) with ranks still
  // connected: each one's figures as they are now, marked final, since none will follow.
  // Call after the jobs were written, before Drain.
  void SendFinalDigests();
  // The collector is stopping: sends what is queued for up to `budget`, then closes.
  void Drain(std::chrono::milliseconds budget);

  std::optional<ClockSample> clock() const { return estimator_.estimate(); }
  uint64_t frames_dropped() const { return frames_dropped_; }
  // Batches kept here because their rank's figures go up instead, and the digests sent.
  uint64_t batches_aggregated() const { return batches_aggregated_; }
  uint64_t digests_sent() const { return digests_sent_; }

 private:
  class Sink;
  struct Stream {
    std::unique_ptr<OutLink> link;
    wire::Hello hello;       // as the rank sent it
    bool have_hello = false;
    bool local_closed = false;
    bool dead = false;       // its link failed: nothing more goes to the root
    bool relay = false;      // every frame goes up unchanged (raw, or a rank already digested)
    Clock::time_point next_digest{};
    bool relink = false;     // lost its link: a new one sends Hello and the latest figures
    Clock::time_point relink_at{};  // while the clock connection is up (else: EndBurst)
    std::string goodbye;     // the rank's Goodbye as sent up, for a new link

    uint64_t dropped = 0;    // frames not forwarded
    Clock::time_point connect_by{};
  };
  void OnStreamFrame(uint64_t id, const wire::Frame& frame, std::string_view raw);
  void OnStreamClose(uint64_t id);
  void LinkStream(uint64_t id, Stream& s);
  void Drop(Stream& s);
  void SendDigest(Stream& s, bool final);
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
  uint64_t batches_aggregated_ = 0, digests_sent_ = 0;
  bool said_drop_ = false;
};

}  // namespace gpuwatch::collector
