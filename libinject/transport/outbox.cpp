// The frame queue, the replay of the last batches sent, and the switch to the spool.
#include "transport/outbox.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ctime>

#include "record/stamp_clock.h"

namespace gpuwatch::inject {
namespace {
constexpr size_t kReplayBytes = 4u << 20;  // more than a Unix socket's send buffer holds
}

void Outbox::Push(std::string frame, uint64_t events, uint64_t activities) {
  if (mode_ == Mode::kSpool) {
    if (!spool_.Append(frame)) {
      dropped_spool_ += events;
      dropped_activities_ += activities;
    }
    return;
  }
  if (pending_bytes_ + frame.size() > opts_.max_buffer_bytes) {
    dropped_unreachable_ += events;  // bounded memory: nobody is taking the data
    dropped_activities_ += activities;
    return;
  }
  pending_bytes_ += frame.size();
  pending_.push_back({std::move(frame), events, activities, false});
}

void Outbox::Remember(Frame f) {
  replay_bytes_ += f.bytes.size();
  replay_.push_back(std::move(f));
  while (replay_bytes_ > kReplayBytes && replay_.size() > 1) {
    replay_bytes_ -= replay_.front().bytes.size();
    replay_.pop_front();
  }
}

void Outbox::SwitchToSpool(const std::string& why) {
  std::string error;
  if (!spool_.Open(opts_.out_dir, opts_.id->rank, opts_.id->pid, opts_.spool_max_bytes, &error)) {
    std::fprintf(stderr, "[gpuwatch] %s, and no spool: %s; recording continues, data beyond %zu bytes is dropped\n",
                 why.c_str(), error.c_str(), opts_.max_buffer_bytes);
    mode_ = Mode::kDrop;
    return;
  }
  std::fprintf(stderr, "[gpuwatch] %s: spooling to %s (gpuwatch report %s rebuilds the summary)\n", why.c_str(),
               spool_.path().c_str(), opts_.out_dir.c_str());
  mode_ = Mode::kSpool;
  std::string head = hello_({});
  for (const Frame& f : replay_) head += f.bytes;
  spool_.Append(head);
  replay_.clear();
  replay_bytes_ = 0;
  for (Frame& f : pending_) {
    if (!f.hello && !spool_.Append(f.bytes)) {
      dropped_spool_ += f.events;
      dropped_activities_ += f.activities;
    }
  }
  pending_.clear();
  pending_bytes_ = 0;
  front_sent_ = 0;
}

void Outbox::Pump(bool may_connect, int wait_ms) {
  if (mode_ != Mode::kCollector) return;
  if (!link_.connected()) {
    const uint64_t now = NowNs();
    if (!may_connect || now < next_connect_ns_) return;
    next_connect_ns_ = now + 1'000'000'000ull;
    if (!link_.Connect(opts_.autostart && !tried_autostart_, opts_.collector_bin, std::max(wait_ms, 2000))) {
      tried_autostart_ = true;
      SwitchToSpool(link_.error());
      return;
    }
    tried_autostart_ = true;
    std::string hello = hello_(link_.token());
    pending_bytes_ += hello.size();
    pending_.push_front({std::move(hello), 0, 0, true});
    front_sent_ = 0;
  }
  while (!pending_.empty()) {
    Frame& f = pending_.front();
    front_sent_ += link_.Write(f.bytes.data() + front_sent_, f.bytes.size() - front_sent_, wait_ms);
    if (front_sent_ < f.bytes.size()) break;
    pending_bytes_ -= f.bytes.size();
    front_sent_ = 0;
    if (!f.hello) Remember(std::move(f));
    pending_.pop_front();
  }
  if (link_.broken()) SwitchToSpool(link_.error());
}

void Outbox::Drain(bool may_connect, int budget_ms) {
  const uint64_t start = NowNs();
  const uint64_t deadline = start + static_cast<uint64_t>(budget_ms) * 1'000'000ull;
  uint64_t progress_ns = start;
  size_t least_left = SIZE_MAX;
  size_t left = 0;
  while (mode_ == Mode::kCollector) {
    const uint64_t now = NowNs();
    if (now >= deadline) break;
    const int wait = static_cast<int>(std::min<uint64_t>((deadline - now) / 1'000'000ull + 1, 20));
    Pump(may_connect, wait);
    if (mode_ != Mode::kCollector || !link_.connected()) return;  // spooled, or nothing may connect
    left = pending_bytes_ - front_sent_ + link_.Unread();
    if (left == 0) return;  // the collector has read everything
    if (left < least_left) {
      least_left = left;
      progress_ns = NowNs();
    } else if (NowNs() - progress_ns >= kStallMs * 1'000'000ull) {
      break;
    }
    if (pending_.empty()) {  // all in the socket: give the collector a moment to read it
      timespec ms{0, 2'000'000};
      nanosleep(&ms, nullptr);
    }
  }
  if (mode_ != Mode::kCollector || !link_.connected()) return;
  char why[160];
  std::snprintf(why, sizeof why, "the collector did not read the last %zu bytes within %llu ms of the exit", left,
                static_cast<unsigned long long>((NowNs() - start) / 1'000'000ull));
  SwitchToSpool(why);
}

}  // namespace gpuwatch::inject
