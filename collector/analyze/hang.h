// A hang: a rank inside a collective or a synchronization for longer than the threshold
// (GPUWATCH_HANG_S), and where every rank of the job was at that moment. Found from the
// ranks' heartbeats (jobs/hang_watch.h); written to the log, summary.json and the trace.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/wire_vocab.h"

namespace gpuwatch::collector {

// Where one rank of the job was when a hang was detected.
struct HangRankState {
  int rank = 0;
  int pid = 0;
  std::string host;
  bool reporting = false;     // it had sent a heartbeat and was connected
  std::string inside;         // API of its longest call in progress, "" if none
  bool inside_collective = false;
  uint64_t inside_seq = 0;
  double inside_s = 0;
  bool has_last_seq = false;  // on the hung call's communicator
  uint64_t last_seq = 0;
};

struct Hang {
  int rank = 0;
  int pid = 0;
  std::string host;
  uint32_t tid = 0;
  uint64_t since_ns = 0;       // the rank's clock: with tid, identifies the call
  std::string api;
  double inside_s = 0;        // when detected
  bool collective = false;
  uint64_t comm_hash = 0;     // unique_hash of its communicator, 0 if unknown
  uint64_t seq = 0;
  std::vector<HangRankState> ranks;  // every rank of the job, by rank
  std::string line;           // the log line
};

// Collectives and synchronizations: the calls a rank can wait in forever.
inline bool IsWaitApi(wire::Api api) { return IsExplicitSync(api) || IsCollective(api); }

}  // namespace gpuwatch::collector
