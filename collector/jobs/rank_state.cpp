// See rank_state.h.
#include "jobs/rank_state.h"

#include <algorithm>

#include "analyze/rank_checkpoint.h"
#include "analyze/rank_digest.h"
#include "trace/rank_trace.h"

namespace gpuwatch::collector {

RankState::RankState(const wire::Hello& hello) : hello_(hello) {
  if (!hello.upstream_digests()) {
    model_ = std::make_unique<RankModel>();
    return;
  }
  // Its figures come ready-made: no interpretation here (a root of thousands of ranks
  // keeps one RankResult each), and until the first digest, an empty one.
  digest_.emplace();
  digest_->rank = hello.rank();
  digest_->host = hello.host();
}

void RankState::OnConnect(const wire::Hello& hello) {
  hello_ = hello;
  ++open_;
  if (model_) model_->OnHello(hello_);
}

void RankState::set_trace(RankTrace* t) {
  if (trace_ || !t || !model_) return;  // the same part after a reconnect: subscribed once
  trace_ = t;
  trace_->Bind(&model_->interpreter().facts());
  model_->Subscribe(trace_);
}

void RankState::OnBatch(const wire::Batch& batch) {
  max_batch_seq_ = std::max(max_batch_seq_, batch.seq());
  if (!model_) return;  // a rank sent as figures sends no events
  model_->OnBatch(batch);
  if (trace_) trace_->AfterBatch();
}

std::string RankState::CheckpointState() const { return model_ ? EncodeRankModel(*model_) : std::string(); }

bool RankState::RestoreState(std::string_view state, std::string* error) {
  if (!model_) {
    *error = "a rank sent as figures keeps no state to restore";
    return false;
  }
  auto restored = std::make_unique<RankModel>();
  if (!DecodeRankModel(state, *restored, error)) return false;
  model_ = std::move(restored);
  if (trace_) {  // the trace goes on from here (it has no state of the run before)
    trace_->Bind(&model_->interpreter().facts());
    model_->Subscribe(trace_);
  }
  return true;
}

void RankState::OnGoodbye(const wire::Goodbye& goodbye) {
  if (model_) model_->OnGoodbye(goodbye);
}

void RankState::OnHeartbeat(const wire::Heartbeat& hb, Clock::time_point now) {
  heartbeat_ = hb;
  // The library sends at most this many; more is nonsense and must not cost memory.
  constexpr int kMaxInside = 64, kMaxComms = 256;
  if (heartbeat_.inside_size() > kMaxInside)
    heartbeat_.mutable_inside()->DeleteSubrange(kMaxInside, heartbeat_.inside_size() - kMaxInside);
  if (heartbeat_.comms_size() > kMaxComms)
    heartbeat_.mutable_comms()->DeleteSubrange(kMaxComms, heartbeat_.comms_size() - kMaxComms);
  heartbeat_at_ = now;
}

bool RankState::OnDigest(const wire::RankDigest& d, std::string* error) {
  if (d.format() != kRankDigestFormat) {
    *error = "rank digest of format " + std::to_string(d.format()) + ", this collector reads " +
             std::to_string(kRankDigestFormat) + " (collectors of different versions)";
    return false;
  }
  RankResult r;
  if (!DecodeRankResult(d.result(), &r, error)) return false;
  ShiftRankResult(r, d.shift_ns());
  digest_ = std::move(r);
  return true;
}

void RankState::set_journal(std::unique_ptr<JournalWriter> j) {
  journal_ = std::move(j);
  if (journal_) storage_.journal = journal_->status();
}

void RankState::OnDisconnect(bool said_goodbye) {
  if (open_ > 0) --open_;
  abnormal_ = !said_goodbye;
  if (open_ > 0) return;
  if (model_) model_->Flush();
  if (trace_) trace_->Finish();
  if (journal_) {
    // Close the file: descriptors stay bounded by open connections. A reconnect reopens it.
    journal_->Flush();
    storage_.journal = journal_->status();
    journal_.reset();
  }
}

void RankState::OnCollectorStop() {
  if (open_ == 0) return;
  abnormal_ = true;
  if (model_) model_->Flush();
  if (trace_) trace_->Finish();
}

}  // namespace gpuwatch::collector
