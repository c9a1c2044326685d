// The rank's step graphs (step_graph.h), sampled over the run: consecutive steps that CUPTI
// recorded whole are cut into graphs of up to kStepsPerGraph steps; a graph is built once
// the device sweep has passed its steps' work. Bounded: at most kMaxGraphs graphs are kept,
// spread over the run (when full, every other one goes and only every other later one is
// built), and the host calls and device work waiting for their steps are capped. Graphs are
// immutable once built, so a copy of the model (a running rank's figures) shares them.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <tuple>
#include <memory>
#include <vector>

#include "analyze/step_graph_builder.h"
#include "interpret/event_sink.h"

namespace gpuwatch::collector {

using StepGraphList = std::vector<std::shared_ptr<const StepGraph>>;

class StepGraphs final : public EventSink {
 public:
  static constexpr size_t kStepsPerGraph = 8;
  static constexpr size_t kMaxGraphs = 16;
  static constexpr uint64_t kFreeGraphs = 4;
  static constexpr uint64_t kBuildShareInv = 25;
  static constexpr size_t kMaxBuffered = size_t{1} << 18;  // host calls, and device works
  static constexpr size_t kMaxNodes = size_t{1} << 17;     // a graph with more is not kept
  // A graph reads the calls of the step before its first too (the work and the events its
  // first step waits for), up to this far back.
  static constexpr uint64_t kMaxLookBackNs = 2'000'000'000;

  void OnHostCall(const HostCall& c) override;
  void OnDeviceWork(const DeviceWork& w) override;
  void OnStep(const StepMark& m) override;
  void OnStepsReset() override;
  void OnDeviceSettled(uint64_t ns) override;

  // The graphs kept, and those whose steps are closed but not yet built, built now from the
  // work seen so far (the rank's end, or a running rank's figures).
  StepGraphList Graphs() const;
  // Host calls and device works buffered for chunks (the closed chunks' taken calls too).
  size_t StateSize() const {
    size_t n = calls_.size() + works_.size();
    for (const Chunk& c : closed_) n += c.calls.size();
    return n;
  }

 private:
  friend struct CheckpointAccess;  // rank checkpoints (analyze/checkpoint_access.h)
  // A chunk waits for its device work to settle: until the sweep passes it, which the next
  // window's records make it do, minutes later where windows are rare. Its host calls are
  // all in once the steps have run a look-back past it, so it takes them then (`taken`), and
  // the calls after it need not wait with it (buffered, they filled the 2^18 cap in ~13
  // minutes of a launch-heavy loop with one window: 42 MB of memory, 4 MB a checkpoint).
  struct Chunk {
    std::vector<StepMark> steps;
    uint64_t works_end = 0;  // the latest end of its work seen so far
    bool taken = false;
    uint64_t from_ns = 0;         // once taken: the look-back it took them with (Reads)
    std::vector<HostCall> calls;  // once taken: its calls (InputOf's), in arrival order
    // Its calls: those of its steps, and those of the step before that end in `from` or later.
    bool Reads(const HostCall& h, uint64_t from) const { return h.end_ns() >= from && h.t_ns < steps.back().end_ns; }
  };
  void Close();
  void TakeCalls();  // the closed chunks' calls, where they are all in
  uint64_t Back(uint64_t t) const { return t > lookback_ns_ ? t - lookback_ns_ : 0; }  // a look-back before t
  void BuildSettled(uint64_t settled);
  GraphInput InputOf(const Chunk& c) const;
  // The buffered calls chunk `c` reads (Chunk::Reads), those of the step before back to `from`.
  std::vector<HostCall> BufferedCallsOf(const Chunk& c, uint64_t from) const;
  static bool Usable(const StepGraph& g);  // nodes, and not over kMaxNodes
  void Keep(StepGraph g);
  void Prune();
  // A chunk is built when its turn comes (one in stride_) and the steps sampled so far are
  // under 1/kBuildShareInv of the steps seen (the first kFreeGraphs chunks always): building
  // a step's graph costs about what analysing its events does, so the graphs cost a bounded
  // share of the rank's CPU.
  bool Sampled(uint64_t chunk) const {
    return chunk % stride_ == 0 && (sampled_chunks_ < kFreeGraphs || sampled_steps_ * kBuildShareInv <= steps_seen_);
  }
  bool Wanted() const;

  // Per (communicator, peer, send or recv): the calls seen. A buffered send's or recv's
  // HostCall::seq is its number there (the communicator's sequence number counts every
  // member's own calls: a stage's n-th send meets the next stage's n-th recv, whatever else
  // each called), so the graph names it across ranks (CommKey); UINT64_MAX past the bound.
  static constexpr size_t kMaxP2pLinks = 1024;
  std::map<std::tuple<uint64_t, int32_t, bool>, uint64_t> p2p_count_;
  std::deque<HostCall> calls_;
  std::deque<GraphWork> works_;
  std::vector<StepMark> open_;  // the steps of the chunk being filled
  bool open_sampled_ = true;
  std::deque<Chunk> closed_;    // waiting for their device work
  StepGraphList graphs_;
  uint64_t chunks_ = 0;   // chunks closed (sampled or not)
  uint64_t stride_ = 1;   // one chunk in stride_ is built
  uint64_t last_end_ = 0; // the latest step's end
  uint64_t lookback_ns_ = 0;  // the latest step's length (kMaxLookBackNs at most)
  uint64_t steps_seen_ = 0, sampled_steps_ = 0, sampled_chunks_ = 0;
};

}  // namespace gpuwatch::collector
