#include "aggregate/rank.h"

#include <algorithm>

#include "trace/rank_trace.h"

namespace gpuwatch::collector {

RankAggregate::RankAggregate(const wire::Hello& hello)
    : hello_(hello), analyses_(MakeRankAnalyses()) {}

void RankAggregate::OnConnect(const wire::Hello& hello) {
  hello_ = hello;
  ++open_;
  for (auto& a : analyses_) a->OnHello(hello_);
}

void RankAggregate::OnBatch(const wire::Batch& batch) {
  for (const auto& e : batch.events()) {
    first_ns_ = std::min(first_ns_, e.t_ns());
    last_ns_ = std::max(last_ns_, e.t_ns() + e.dur_ns());
  }
  events_ += batch.events_size();
  for (auto& a : analyses_) a->OnBatch(batch);
  if (trace_) trace_->OnBatch(batch);
}

void RankAggregate::OnGoodbye(const wire::Goodbye& goodbye) {
  for (auto& a : analyses_) a->OnGoodbye(goodbye);
}

void RankAggregate::OnHeartbeat(const wire::Heartbeat& hb, Clock::time_point now) {
  heartbeat_ = hb;
  // The library sends at most this many; more is nonsense and must not cost memory.
  constexpr int kMaxInside = 64, kMaxComms = 256;
  if (heartbeat_.inside_size() > kMaxInside)
    heartbeat_.mutable_inside()->DeleteSubrange(kMaxInside, heartbeat_.inside_size() - kMaxInside);
  if (heartbeat_.comms_size() > kMaxComms)
    heartbeat_.mutable_comms()->DeleteSubrange(kMaxComms, heartbeat_.comms_size() - kMaxComms);
  heartbeat_at_ = now;
}

void RankAggregate::set_journal(std::unique_ptr<JournalWriter> j) {
  journal_ = std::move(j);
  if (journal_) storage_.journal = journal_->status();
}

void RankAggregate::OnDisconnect(bool said_goodbye) {
  if (open_ > 0) --open_;
  abnormal_ = !said_goodbye;
  if (open_ == 0 && trace_) trace_->Finish();
  if (open_ == 0 && journal_) {
    // Close the file: descriptors stay bounded by open connections. A reconnect reopens it.
    journal_->Flush();
    storage_.journal = journal_->status();
    journal_.reset();
  }
}

void RankAggregate::OnCollectorStop() {
  if (open_ > 0) abnormal_ = true;
  if (open_ > 0 && trace_) trace_->Finish();
}

double RankAggregate::wall_s() const {
  if (last_ns_ < first_ns_) return 0.0;
  return static_cast<double>(last_ns_ - first_ns_) * 1e-9;
}

}  // namespace gpuwatch::collector
