// Where encoded frames go: to the collector while it takes them, else to the spool file.
// Frames are queued whole; the last few MiB sent are kept to spool again if the collector
// dies before reading them (batches carry a seq, so the report counts each once).
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>

#include "transport/collector_link.h"
#include "transport/identity.h"
#include "transport/spool.h"

namespace gpuwatch::inject {

class Outbox {
 public:
  struct Options {
    bool autostart = true;
    std::string collector_bin;
    std::string out_dir;
    size_t max_buffer_bytes = 8u << 20;  // held while unconnected
    size_t spool_max_bytes = 256u << 20;
    const Identity* id = nullptr;  // rank and pid name the spool file
  };
  // `hello` makes the Hello frame that opens a connection or a spool; its argument is the
  // job token, given only for a TCP connection (a spool never holds it).
  Outbox(Options opts, std::function<std::string(std::string_view token)> hello)
      : opts_(std::move(opts)), hello_(std::move(hello)) {}

  // Queues a whole frame carrying `events` host events and `activities` CUPTI records
  // (counted as dropped if it cannot be kept).
  void Push(std::string frame, uint64_t events, uint64_t activities);
  bool empty() const { return pending_.empty(); }
  // A quarter of the unconnected buffer is used: time to connect whatever is still unknown.
  bool filling() const { return pending_bytes_ > opts_.max_buffer_bytes / 4; }

  // Moves queued frames on: connects first when `may_connect` (and a retry is due), waits
  // up to `wait_ms` for the socket to take data.
  void Pump(bool may_connect, int wait_ms);

  // At exit: moves everything queued on and waits until the collector has read it, within
  // `budget_ms` (GPUWATCH_EXIT_TIMEOUT_MS). A collector that reads nothing for kStallMs is
  // alive but not reading: what it has not read (the replayed batches, the queue) goes to the
  // spool at once, with one line, rather than the job waiting out the budget; so does what
  // is left when the budget runs out. Nothing is lost without a word.
  void Drain(bool may_connect, int budget_ms);
  static constexpr int kStallMs = 500;

  void Close() { link_.Close(); }
  uint64_t dropped_unreachable() const { return dropped_unreachable_; }
  uint64_t dropped_spool() const { return dropped_spool_; }
  uint64_t dropped_activities() const { return dropped_activities_; }

 private:
  struct Frame {
    std::string bytes;
    uint64_t events, activities;
    bool hello;  // opens a connection: never replayed
  };
  void SwitchToSpool(const std::string& why);
  void Remember(Frame f);

  Options opts_;
  std::function<std::string(std::string_view token)> hello_;
  enum class Mode { kCollector, kSpool, kDrop } mode_ = Mode::kCollector;
  CollectorLink link_;
  Spool spool_;
  std::deque<Frame> pending_;
  size_t pending_bytes_ = 0;
  size_t front_sent_ = 0;  // bytes of pending_.front() already in the socket
  std::deque<Frame> replay_;
  size_t replay_bytes_ = 0;
  uint64_t next_connect_ns_ = 0;
  bool tried_autostart_ = false;
  uint64_t dropped_unreachable_ = 0;
  uint64_t dropped_spool_ = 0;
  uint64_t dropped_activities_ = 0;
};

}  // namespace gpuwatch::inject
