// collectives: NCCL operations per op, with bandwidths as nccl-tests defines them
// (field-facts.md, "Collectives"): S = bytes for AllReduce/Broadcast/Reduce/Send/Recv,
// S = nranks x bytes for AllGather/ReduceScatter; algbw = S / t;
// busbw = algbw x factor, factor AllReduce 2(n-1)/n, AllGather/ReduceScatter (n-1)/n, else 1.
// t is the GPU time measured by the library with CUDA events.
//
// Bandwidths come from totals. Because one rank may use communicators of different sizes
// (tensor- and data-parallel groups), the factor is applied per call: we sum S x factor
// ("bus bytes") and divide by the summed time, which for a single n is exactly
// algbw x factor. Calls without GPU time (FLAG_NO_GPU_TIME or gpu_ns == 0) count in
// `count` and `bytes` but not in the bandwidths, which would otherwise be inflated.
#include <array>
#include <unordered_map>

#include "analyze/analysis.h"
#include "analyze/bus_factor.h"
#include "report/format.h"

namespace gpuwatch::collector {
namespace {

// Communicators a rank may announce; more are ignored (their calls fall back to the
// world size). Bounds memory against a rank that creates communicators in a loop.
constexpr size_t kMaxCommunicators = 4096;

struct Op {
  const char* name;
  wire::Api api;
};
constexpr std::array<Op, 7> kOps = {{{"allreduce", wire::NCCL_ALL_REDUCE},
                                     {"allgather", wire::NCCL_ALL_GATHER},
                                     {"reducescatter", wire::NCCL_REDUCE_SCATTER},
                                     {"broadcast", wire::NCCL_BROADCAST},
                                     {"reduce", wire::NCCL_REDUCE},
                                     {"send", wire::NCCL_SEND},
                                     {"recv", wire::NCCL_RECV}}};

struct OpStats {
  uint64_t count = 0;
  uint64_t bytes = 0;        // S, all calls
  uint64_t timed_bytes = 0;  // S, calls with GPU time
  double bus_bytes = 0;      // S x factor, calls with GPU time
  uint64_t gpu_ns = 0;
  uint64_t no_gpu_time = 0;

  double algbw() const { return Gbps(static_cast<double>(timed_bytes), Seconds(gpu_ns)); }
  double busbw() const { return Gbps(bus_bytes, Seconds(gpu_ns)); }
};

int OpIndex(wire::Api api) {
  for (size_t i = 0; i < kOps.size(); ++i)
    if (kOps[i].api == api) return static_cast<int>(i);
  return -1;
}

}  // namespace

double BusFactor(wire::Api api, int n) {
  if (n < 1) n = 1;  // unknown size: no peers to move data to
  switch (api) {
    case wire::NCCL_ALL_REDUCE: return 2.0 * (n - 1) / n;
    case wire::NCCL_ALL_GATHER:
    case wire::NCCL_REDUCE_SCATTER: return static_cast<double>(n - 1) / n;
    default: return 1.0;
  }
}

namespace {

class CollectivesAnalysis final : public RankAnalysis {
 public:
  const char* name() const override { return "collectives"; }

  void OnHello(const wire::Hello& h) override { world_size_ = h.world_size(); }

  void OnBatch(const wire::Batch& batch) override {
    for (const auto& c : batch.communicators()) {
      if (comms_.size() < kMaxCommunicators || comms_.count(c.comm_id()))
        comms_[c.comm_id()] = c.nranks();
    }
    for (const auto& e : batch.events()) {
      const int i = OpIndex(e.api());
      if (i < 0) continue;
      auto it = comms_.find(e.comm_id());
      const int n = it != comms_.end() ? it->second : world_size_;
      const bool gathered = e.api() == wire::NCCL_ALL_GATHER ||
                            e.api() == wire::NCCL_REDUCE_SCATTER;
      const uint64_t s = gathered ? e.bytes() * static_cast<uint64_t>(n > 0 ? n : 1) : e.bytes();
      OpStats& o = ops_[i];
      ++o.count;
      o.bytes += s;
      if ((e.flags() & wire::FLAG_NO_GPU_TIME) || e.gpu_ns() == 0) {
        ++o.no_gpu_time;
        continue;
      }
      o.timed_bytes += s;
      o.bus_bytes += static_cast<double>(s) * BusFactor(e.api(), n);
      o.gpu_ns += e.gpu_ns();
    }
  }

  void Merge(const RankAnalysis& other) override {
    const auto& o = static_cast<const CollectivesAnalysis&>(other);
    for (size_t i = 0; i < ops_.size(); ++i) {
      OpStats& a = ops_[i];
      const OpStats& b = o.ops_[i];
      a.count += b.count;
      a.bytes += b.bytes;
      a.timed_bytes += b.timed_bytes;
      a.bus_bytes += b.bus_bytes;
      a.gpu_ns += b.gpu_ns;
      a.no_gpu_time += b.no_gpu_time;
    }
  }

  void WriteJson(nlohmann::json& obj) const override {
    nlohmann::json c = nlohmann::json::object();
    for (size_t i = 0; i < ops_.size(); ++i) {
      const OpStats& o = ops_[i];
      if (o.count == 0) continue;
      c[kOps[i].name] = {{"count", o.count},         {"bytes", o.bytes},
                         {"total_s", Seconds(o.gpu_ns)}, {"algbw_gbps", o.algbw()},
                         {"busbw_gbps", o.busbw()},  {"no_gpu_time_count", o.no_gpu_time}};
    }
    obj["collectives"] = c;
  }

  void WriteText(std::string& out) const override {
    uint64_t total = 0, untimed = 0;
    for (const auto& o : ops_) {
      total += o.count;
      untimed += o.no_gpu_time;
    }
    if (total == 0) {
      out += "  collectives: none\n";
      return;
    }
    out += Printf("  %-15s %7s %11s %12s %11s %11s\n", "collectives", "calls", "bytes",
                  "GPU time", "algbw GB/s", "busbw GB/s");
    for (size_t i = 0; i < ops_.size(); ++i) {
      const OpStats& o = ops_[i];
      if (o.count == 0) continue;
      out += Printf("    %-13s %7llu %11s %12s %11s %11s\n", kOps[i].name,
                    static_cast<unsigned long long>(o.count), FmtBytes(o.bytes).c_str(),
                    FmtDuration(Seconds(o.gpu_ns)).c_str(), FmtRate(o.algbw()).c_str(),
                    FmtRate(o.busbw()).c_str());
    }
    if (untimed)
      out += Printf("    (%llu call%s without GPU time left out of the bandwidths)\n",
                    static_cast<unsigned long long>(untimed), untimed == 1 ? "" : "s");
  }

  std::string Headline() const override {
    uint64_t n = 0;
    for (const auto& o : ops_) n += o.count;
    return Printf("%llu collectives", static_cast<unsigned long long>(n));
  }

 private:
  std::array<OpStats, kOps.size()> ops_{};
  std::unordered_map<uint64_t, int> comms_;
  int world_size_ = 0;
};

}  // namespace

std::unique_ptr<RankAnalysis> MakeCollectivesAnalysis() {
  return std::make_unique<CollectivesAnalysis>();
}

}  // namespace gpuwatch::collector
