// Synthetic ranks fed through the collector's own Connection -> JobTable -> RankState path
// into a trace file, for the trace writer's tests and the merge's (trace_merge_test.cpp).
#pragma once
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

#include "fixtures.h"
#include "trace/job_trace.h"

namespace gwtest {

inline std::string TempDir(const std::string& name) {
  const std::filesystem::path d = std::filesystem::temp_directory_path() / ("gw-trace-" + name + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d.string();
}

inline std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline wire::Activity* Act(wire::Batch* b, wire::ActivityKind kind, uint64_t start, uint64_t end, uint32_t corr,
                    uint32_t stream = 7) {
  return Work(b, kind, start, end, corr, stream);
}

constexpr uint64_t kT0 = 5'000'000'000;  // 5 s on the rank's clock
constexpr uint64_t kMs = 1'000'000;

// Rank `rank`'s steps: each has a launch + API record + kernel (ids 1, 2), an H2D copy (hook
// and device), a sync, an allreduce. Device records of step i arrive one batch later (lag),
// and step 3's kernels overlap on one stream (lanes).
struct Fed {
  uint64_t kernels = 0, gpu_h2d = 0, host_h2d = 0, allreduce = 0, syncs = 0;
};

inline Fed FeedRank(col::JobTable& jobs, int rank, int steps) {
  FakeRank r(jobs, Hello("job", rank, 2));
  Fed fed;
  wire::Batch lagged;
  uint32_t corr = 1;
  for (int i = 0; i < steps; ++i) {
    wire::Batch b;
    if (i == 0) {
      auto* k = b.add_kernel_names();
      k->set_id(1);
      k->set_name("_Z6fwd_bwdPfi");
      k = b.add_kernel_names();
      k->set_id(2);
      k->set_name("ncclDevKernel_AllReduce_Sum_f32_RING_LL");
      Comm(&b, 11, 2, rank);
    }
    const uint64_t t = kT0 + static_cast<uint64_t>(i) * 20 * kMs;
    auto* l = Add(&b, wire::CUDA_LAUNCH_KERNEL, t, 5000);
    l->set_tid(100);
    l->set_name_id(1);
    Copy(&b, wire::CUDA_MEMCPY_ASYNC, wire::COPY_H2D, 1 << 20, t + 10000, 20000,
         wire::FLAG_PAGEABLE)->set_tid(100);
    ++fed.host_h2d;
    Add(&b, wire::CUDA_STREAM_SYNCHRONIZE, t + 40000, 3 * kMs)->set_tid(100);
    ++fed.syncs;
    auto* c = Coll(&b, wire::NCCL_ALL_REDUCE, 11, 1 << 24, 2 * kMs, t + 4 * kMs);
    c->set_tid(101);
    c->set_seq(static_cast<uint64_t>(i));
    ++fed.allreduce;
    // Device side, one batch late.
    Act(&lagged, wire::ACTIVITY_API, t + 1000, t + 4000, corr);
    Act(&lagged, wire::ACTIVITY_KERNEL, t + 50000, t + 2 * kMs, corr++)->set_name_id(1);
    ++fed.kernels;
    if (i == 3) {  // overlapping work on one stream: must go to another lane
      Act(&lagged, wire::ACTIVITY_KERNEL, t + 60000, t + 3 * kMs, 0)->set_name_id(1);
      ++fed.kernels;
    }
    auto* m = Act(&lagged, wire::ACTIVITY_MEMCPY, t + 2 * kMs, t + 2 * kMs + 40000, 0, 8);
    m->set_copy_kind(wire::COPY_H2D);
    m->set_bytes(1 << 20);
    ++fed.gpu_h2d;
    Act(&lagged, wire::ACTIVITY_KERNEL, t + 4 * kMs, t + 6 * kMs, 0, 9)->set_name_id(2);
    ++fed.kernels;
    Act(&lagged, wire::ACTIVITY_MEMSET, t + 7 * kMs, t + 7 * kMs + 1000, 0);
    if (i % 2 == 1) {  // the previous steps' device records arrive now, out of order
      for (int j = lagged.activities_size() - 1; j >= 0; --j) *b.add_activities() = lagged.activities(j);
      lagged.Clear();
    }
    r.SendBatch(b);
  }
  if (lagged.activities_size()) r.SendBatch(lagged);
  r.Goodbye();
  r.Close();
  return fed;
}

inline col::JobTable TracedJobs(const std::string& path, col::TraceOptions opt = {}) {
  col::JobTable jobs(col::JobTiming{});
  jobs.set_trace_factory([path, opt](const wire::Hello&) {
    std::string error;
    auto t = col::JobTrace::Open(path, opt, &error);
    REQUIRE(t);
    return t;
  });
  return jobs;
}

}  // namespace gwtest
