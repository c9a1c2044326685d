// The shared-memory segment through which the ranks of one simulated communicator meet.
//
// Ranks are separate processes. For every collective (per-communicator sequence number)
// and every send/recv pair (per ordered peer pair sequence number), each participant posts
// the time its device reaches the op into a ring slot tagged with the sequence number;
// once all participants' tags match, everyone computes the same end time.
//
// A ring slot is reused only after every participant has resolved the op that used it:
// each participant publishes `done` (all sequence numbers below it are resolved), and a
// post for sequence s waits until min(done) + ring > s. A fast rank can thus run at most
// `ring` ops ahead of the slowest one's resolver, never overwrite a slot still needed.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace simnccl {

constexpr int kMaxRanks = 512;
constexpr uint64_t kCollRing = 1024;  // collectives in flight per communicator
constexpr uint64_t kP2pRing = 64;     // sends/recvs in flight per ordered pair
constexpr uint64_t kSplitRing = 8;    // ncclCommSplit calls in flight

struct Slot {
  std::atomic<uint64_t> tag;  // sequence number + 1; 0 = never written
  uint64_t value;             // arrival time (ns), or color/key for splits
};

// One rendezvous channel: `m` participants, a ring of `ring` slots each.
struct Channel {
  std::atomic<uint64_t>* done = nullptr;  // [m]
  Slot* slots = nullptr;                  // [ring][m]
  int m = 0;
  uint64_t ring = 0;

  Slot& slot(uint64_t seq, int participant) const { return slots[(seq % ring) * m + participant]; }
  bool can_post(uint64_t seq) const;
  void post(uint64_t seq, int participant, uint64_t value) const;
  // True (and the values) once every participant posted `seq`.
  bool gather(uint64_t seq, uint64_t* values) const;
};

class Segment {
 public:
  // Opens (creating if needed) the segment `name` sized for `nranks`. Empty error = success.
  bool open(const std::string& name, int nranks, std::string& error);
  void close();     // unmaps; does not unlink
  void unlink();    // removes the name (the last rank to leave does this)

  Channel collectives() const;
  Channel pair(int src, int dst) const;  // participant 0 = sender, 1 = receiver
  Channel splits() const;                // value = (color << 32) | key

  std::atomic<uint32_t>& joined() const;
  std::atomic<uint32_t>& left() const;
  const std::string& name() const { return name_; }

 private:
  Channel channel(size_t offset, int m, uint64_t ring) const;
  static size_t channel_bytes(int m, uint64_t ring);
  std::string name_;
  int n_ = 0;
  char* base_ = nullptr;
  size_t size_ = 0;
};

}  // namespace simnccl
