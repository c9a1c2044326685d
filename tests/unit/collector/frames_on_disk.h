// Writing journal/spool files by hand (as the library's spool writer will), reading them back
// as `gpuwatch report` does, and heartbeat builders, for the store, replay and hang tests.
#pragma once
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "fixtures.h"
#include "ingest/replay.h"
#include "journal.h"
#include "report/summary.h"

namespace gwtest {

inline void WriteFrameFile(const std::string& path, const std::vector<wire::Frame>& frames,
                           uint32_t flags = 0, const std::string& tail = "") {
  unsigned char header[wire::kJournalHeaderBytes];
  wire::EncodeJournalHeader(header, flags);
  std::string bytes(reinterpret_cast<const char*>(header), sizeof header);
  for (const auto& f : frames) wire::AppendFrame(f, bytes);
  bytes += tail;
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
  close(fd);
}

// A summary without what differs between two writes of the same figures (when, which files).
inline nlohmann::json WithoutStorage(nlohmann::json s) {
  s.erase("generated_at");
  for (auto& r : s["ranks"]) r.erase("storage");
  return s;
}

// The summary `gpuwatch report` rebuilds for job `job` from the frame files under dir.
inline nlohmann::json RebuiltSummary(const std::string& dir, const std::string& job, col::ReplayResult* result) {
  col::JobTable jobs(col::JobTiming{});
  std::string error;
  REQUIRE(col::ReplayDir(dir, jobs, result, &error));
  REQUIRE(jobs.Find(job));
  return SummaryJson(*jobs.Find(job), "t");
}

inline wire::Frame BatchFrame(const wire::Batch& b) {
  wire::Frame f;
  *f.mutable_batch() = b;
  return f;
}

inline wire::Frame GoodbyeFrame() {
  wire::Frame f;
  f.mutable_goodbye()->set_events_sent(1);
  return f;
}

inline wire::Batch Syncs(int n, uint64_t t0 = 1000) {
  wire::Batch b;
  for (int i = 0; i < n; ++i) Add(&b, wire::CUDA_STREAM_SYNCHRONIZE, t0 + 1000 * i, 100);
  return b;
}

// A heartbeat taken at `now_ns`; `inside_for_ns` > 0 adds a call in progress that long.
inline wire::Frame Heartbeat(uint64_t now_ns, wire::Api api, uint64_t inside_for_ns,
                             uint64_t comm_id = 0, uint64_t seq = 0) {
  wire::Frame f;
  auto* hb = f.mutable_heartbeat();
  hb->set_now_ns(now_ns);
  if (inside_for_ns > 0) {
    auto* in = hb->add_inside();
    in->set_api(api);
    in->set_since_ns(now_ns - inside_for_ns);
    in->set_tid(77);
    in->set_comm_id(comm_id);
    in->set_seq(seq);
  }
  return f;
}

inline void AddProgress(wire::Frame& hb, uint64_t comm_id, uint64_t hash, uint64_t last_seq) {
  auto* c = hb.mutable_heartbeat()->add_comms();
  c->set_comm_id(comm_id);
  c->set_unique_hash(hash);
  c->set_last_seq(last_seq);
  c->set_any_returned(true);
}

}  // namespace gwtest
