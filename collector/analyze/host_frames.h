// What the host was doing while the GPU waited for it (issue 16): the library's samples of
// the CUDA-calling threads' Python stacks (interpret/events.h ThreadSample) joined with the
// GPU's host-wait gaps (interpret/device_sweep.h). A sample in a gap counts for its user
// frame (interpret/python_frames.h; for a thread without Python, its native frames and the
// syscall it was blocked in, interpret/native_frames.h). A gap's samples are the thread's
// whose call launched the work that ended the gap: the thread the GPU waited for (in a DDP
// job, the main thread in the forward pass, while autograd's thread makes most of the CUDA
// calls). Where that call is not known, the thread that made the most CUDA calls.
//
// Streaming, bounded, as input_io.h: samples arrive within a flush, gaps ~2 s behind the
// newest CUPTI record. Gaps wait until a sample has passed their end; samples are kept until
// no later gap can start before them (OnDeviceSettled). Each side is capped at kMaxKept.
#pragma once
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "interpret/event_sink.h"
#include "interpret/rank_facts.h"

namespace gpuwatch::collector {

inline constexpr size_t kMaxHostFramesShown = 5;

struct HostFrame {
  std::string where;  // "train.py:42 in log_metrics": the innermost frame outside the framework
                      // (native: "read_input(int) (app)", outside the system's libraries)
  std::string blocked_in;  // native: the syscall the thread was blocked in there ("read"); empty: running
  uint64_t samples = 0;
  double share = 0;   // of the training thread's samples in host-wait gaps
};

struct HostFramesFigures {
  uint64_t samples = 0;          // samples in host-wait gaps of the threads the GPU waited for
  uint32_t tid = 0;              // the training thread (most CUDA calls)
  double data_loading_share = 0;  // of those samples: iterating a DataLoader (python_frames.h),
                                  // or blocked on input or a producer (native_frames.h)
  double unnamed_share = 0;      // of those samples: no frame of the user's code (no stack, or
                                  // system libraries' native frames only): evidence of nothing
  std::vector<HostFrame> frames;  // by share, at most kMaxHostFramesShown
  bool known() const { return samples > 0; }
};

class HostFrames final : public EventSink {
 public:
  static constexpr size_t kMaxKept = 65536;
  // Launching calls kept to name a gap's thread: about 2 s of a launch-heavy loop (the
  // sweep's reorder horizon); older gaps fall back to the training thread.
  static constexpr size_t kMaxLaunches = 262144;
  // How far a CUPTI API record's start may sit outside its hooked call's span: the
  // CUPTI-to-host clock mapping's error.
  static constexpr uint64_t kLaunchSlackNs = 2000;

  void OnHostCall(const HostCall& c) override;
  void OnThreadSample(const ThreadSample& s) override;
  void OnIdle(const IdleGap& g) override;
  void OnDeviceSettled(uint64_t mark) override;
  // The figures so far; gaps still waiting for samples count with those at hand.
  HostFramesFigures Result(const RankFacts& facts) const;

 private:
  friend struct CheckpointAccess;  // rank checkpoints (analyze/checkpoint_access.h)
  struct Gap {
    uint64_t a, b;
    uint32_t tid;  // the launching thread; 0: not known
  };
  struct Launch {
    uint64_t start_ns, end_ns;
    uint32_t tid;
  };
  using Tally = std::unordered_map<uint64_t, uint64_t>;  // (tid << 32 | stack id) -> samples
  // Samples of gaps whose thread is known (only that thread's), and of the others (every
  // thread's; the training thread's are read at the end, when it is known).
  struct Tallies {
    Tally known, unknown;
  };
  void Match();
  void Count(const Gap& g, Tallies& into) const;
  uint32_t LaunchingThread(uint64_t launch_ns) const;

  std::unordered_map<uint32_t, uint64_t> calls_by_tid_;
  std::deque<ThreadSample> samples_;
  std::deque<Gap> gaps_;
  std::deque<Launch> launches_;  // calls that enqueue device work, by start
  uint64_t newest_sample_ns_ = 0;
  Tallies tally_;
};

}  // namespace gpuwatch::collector
