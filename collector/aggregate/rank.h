// Everything the collector keeps about one rank: its identity (the Hello), how it ended,
// its wall-time span, and its analyses. Fed one decoded frame at a time; size does not
// depend on how long the rank runs.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "analyze/analysis.h"
#include "gpuwatch.pb.h"
#include "store/journal_store.h"

namespace gpuwatch::collector {

class RankTrace;
using Clock = std::chrono::steady_clock;

// Where this rank's data was kept and where `gpuwatch report` found it (summary "storage").
struct RankStorage {
  JournalStatus journal;                   // the live collector's journal of this rank
  std::vector<std::string> rebuilt_from;   // report: the files replayed, in order (max 16)
  bool spool_capped = false;               // a spool said its writer stopped at its cap
  uint64_t truncated_tail_bytes = 0;       // report: incomplete last frames ignored
};

class RankAggregate {
 public:
  explicit RankAggregate(const wire::Hello& hello);

  // A connection of this rank said Hello (the first one, or a reconnect).
  void OnConnect(const wire::Hello& hello);
  void OnBatch(const wire::Batch& batch);
  void OnGoodbye(const wire::Goodbye& goodbye);
  // The latest heartbeat replaces the previous one (clipped to bounded sizes).
  void OnHeartbeat(const wire::Heartbeat& heartbeat, Clock::time_point now);
  // A connection of this rank went away; `said_goodbye` tells a normal end from a crash.
  void OnDisconnect(bool said_goodbye);
  // The collector is stopping while the rank is still connected: it did not end normally.
  void OnCollectorStop();

  const wire::Hello& hello() const { return hello_; }
  // "normal" when the last connection closed after a Goodbye, else "abnormal".
  const char* ended() const { return abnormal_ || open_ > 0 ? "abnormal" : "normal"; }
  bool ended_normally() const { return !abnormal_ && open_ == 0; }
  // First event start to last event end, host seconds.
  double wall_s() const;
  uint64_t events() const { return events_; }
  const Analyses& analyses() const { return analyses_; }
  int open_connections() const { return open_; }
  // The last heartbeat and when it arrived; has_heartbeat() false before the first.
  bool has_heartbeat() const { return heartbeat_at_ != Clock::time_point{}; }
  const wire::Heartbeat& heartbeat() const { return heartbeat_; }
  Clock::time_point heartbeat_at() const { return heartbeat_at_; }

  // The journal of this rank while a connection is open (null when journaling is off or
  // could not start), and what happened to it.
  JournalWriter* journal() const { return journal_.get(); }
  void set_journal(std::unique_ptr<JournalWriter> j);
  RankStorage& storage() { return storage_; }
  // This rank's part of the job's trace (owned by the job's JobTrace), null when off.
  void set_trace(RankTrace* t) { trace_ = t; }
  const RankStorage& storage() const { return storage_; }

 private:
  wire::Hello hello_;
  Analyses analyses_;
  int open_ = 0;           // connections of this rank now open
  bool abnormal_ = false;  // the latest connection to close did so without a Goodbye
  uint64_t first_ns_ = UINT64_MAX;
  uint64_t last_ns_ = 0;
  uint64_t events_ = 0;
  wire::Heartbeat heartbeat_;
  Clock::time_point heartbeat_at_{};
  std::unique_ptr<JournalWriter> journal_;
  RankStorage storage_;
  RankTrace* trace_ = nullptr;
};

}  // namespace gpuwatch::collector
