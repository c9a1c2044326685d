// Everything the collector keeps about one rank: its identity (the Hello), its connections
// and how it ended, its last heartbeat, its journal, and its RankModel (interpretation and
// analyses; the trace subscribes to it). Fed one decoded frame at a time by ingest; size
// does not depend on how long the rank runs.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "analyze/rank_model.h"
#include "gpuwatch.pb.h"
#include "ingest/journal_store.h"
#include "ingest/rank_sink.h"

namespace gpuwatch::collector {

class RankTrace;

class RankState final : public RankSink {
 public:
  explicit RankState(const wire::Hello& hello);

  // A connection of this rank said Hello (the first one, or a reconnect).
  void OnConnect(const wire::Hello& hello);
  // RankSink.
  const wire::Hello& hello() const override { return hello_; }
  void OnBatch(const wire::Batch& batch) override;
  void OnGoodbye(const wire::Goodbye& goodbye) override;
  void NoteCollectorCpu(uint64_t ns) override {
    if (model_) model_->NoteCollectorCpu(ns);
  }
  // The latest heartbeat replaces the previous one (clipped to bounded sizes).
  void OnHeartbeat(const wire::Heartbeat& heartbeat, Clock::time_point now) override;
  bool OnDigest(const wire::RankDigest& digest, std::string* error) override;
  JournalWriter* journal() const override { return journal_.get(); }
  void set_journal(std::unique_ptr<JournalWriter> j) override;
  RankStorage& storage() override { return storage_; }
  const RankStorage& storage() const { return storage_; }
  std::string CheckpointState() const override;
  bool RestoreState(std::string_view state, std::string* error) override;
  uint64_t max_batch_seq() const override { return max_batch_seq_; }

  // A connection of this rank went away; `said_goodbye` tells a normal end from a crash.
  // When it was the last one, everything held is interpreted (and reaches the trace).
  void OnDisconnect(bool said_goodbye);
  // The collector is stopping while the rank is still connected: it did not end normally.
  void OnCollectorStop();

  // "normal" when the last connection closed after a Goodbye, else "abnormal".
  const char* ended() const { return ended_normally() ? "normal" : "abnormal"; }
  bool ended_normally() const { return !abnormal_ && open_ == 0; }
  int open_connections() const { return open_; }
  // The last heartbeat and when it arrived; has_heartbeat() false before the first.
  bool has_heartbeat() const { return heartbeat_at_ != Clock::time_point{}; }
  const wire::Heartbeat& heartbeat() const { return heartbeat_; }
  Clock::time_point heartbeat_at() const { return heartbeat_at_; }

  // The figures: interpreted here, or those the rank's host collector sent (a digest).
  const RankResult& result() const { return digest_ ? *digest_ : model_->Result(); }
  bool from_digests() const { return hello_.upstream_digests(); }
  // This rank's part of the job's trace (owned by the job's JobTrace), null when off.
  void set_trace(RankTrace* t);

 private:
  wire::Hello hello_;
  std::unique_ptr<RankModel> model_;  // null for a rank sent as figures (upstream_digests)
  std::optional<RankResult> digest_;  // its latest RankDigest
  int open_ = 0;           // connections of this rank now open
  bool abnormal_ = false;  // the latest connection to close did so without a Goodbye
  wire::Heartbeat heartbeat_;
  Clock::time_point heartbeat_at_{};
  std::unique_ptr<JournalWriter> journal_;
  RankStorage storage_;
  RankTrace* trace_ = nullptr;
  uint64_t max_batch_seq_ = 0;
};

}  // namespace gpuwatch::collector
