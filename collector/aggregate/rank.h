// Everything the collector keeps about one rank: its identity (the Hello), how it ended,
// its wall-time span, and its analyses. Fed one decoded frame at a time; size does not
// depend on how long the rank runs.
#pragma once
#include <cstdint>
#include <string>

#include "analyze/analysis.h"
#include "gpuwatch.pb.h"

namespace gpuwatch::collector {

class RankAggregate {
 public:
  explicit RankAggregate(const wire::Hello& hello);

  // A connection of this rank said Hello (the first one, or a reconnect).
  void OnConnect(const wire::Hello& hello);
  void OnBatch(const wire::Batch& batch);
  void OnGoodbye(const wire::Goodbye& goodbye);
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

 private:
  wire::Hello hello_;
  Analyses analyses_;
  int open_ = 0;           // connections of this rank now open
  bool abnormal_ = false;  // the latest connection to close did so without a Goodbye
  uint64_t first_ns_ = UINT64_MAX;
  uint64_t last_ns_ = 0;
  uint64_t events_ = 0;
};

}  // namespace gpuwatch::collector
