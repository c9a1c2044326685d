// Hang detection from heartbeats. The collector only sees a call when it returns, so the
// library's Heartbeat says which watched calls are in progress (since when) and how far
// each communicator has got. A rank counts as hung when it has been inside a collective or
// a synchronization for at least the threshold: heartbeat.now_ns - since_ns (the rank's
// own clock) plus the time since that heartbeat arrived (the collector's clock), so a rank
// whose heartbeats stop while inside a call is still caught.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gpuwatch.pb.h"

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
bool IsWaitApi(wire::Api api);

}  // namespace gpuwatch::collector
