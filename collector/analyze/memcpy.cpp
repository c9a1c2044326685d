// memcpy: host-side view of host<->device copies (cudaMemcpy and cudaMemcpyAsync), per
// direction. total_s is host time inside the copy calls, so a copy that blocked the host is
// counted here and under sync as well. D2D and H2H copies are not reported (yet).
#include <array>

#include "analyze/analysis.h"
#include "analyze/api_names.h"
#include "report/format.h"

namespace gpuwatch::collector {
namespace {

struct Direction {
  uint64_t count = 0, bytes = 0, ns = 0;
  uint64_t pageable_count = 0, pageable_bytes = 0, blocking_count = 0;

  void Add(const Direction& o) {
    count += o.count;
    bytes += o.bytes;
    ns += o.ns;
    pageable_count += o.pageable_count;
    pageable_bytes += o.pageable_bytes;
    blocking_count += o.blocking_count;
  }
  double gbps() const { return Gbps(static_cast<double>(bytes), Seconds(ns)); }
};

class MemcpyAnalysis final : public RankAnalysis {
 public:
  const char* name() const override { return "memcpy"; }

  void OnBatch(const wire::Batch& batch) override {
    for (const auto& e : batch.events()) {
      if (e.api() != wire::CUDA_MEMCPY && e.api() != wire::CUDA_MEMCPY_ASYNC) continue;
      Direction* d = e.copy_kind() == wire::COPY_H2D   ? &dir_[0]
                     : e.copy_kind() == wire::COPY_D2H ? &dir_[1]
                                                       : nullptr;
      if (!d) continue;
      ++d->count;
      d->bytes += e.bytes();
      d->ns += e.dur_ns();
      if (HasFlag(e, wire::FLAG_PAGEABLE)) {
        ++d->pageable_count;
        d->pageable_bytes += e.bytes();
      }
      if (HasFlag(e, wire::FLAG_BLOCKED_HOST)) ++d->blocking_count;
    }
  }

  void Merge(const RankAnalysis& other) override {
    const auto& o = static_cast<const MemcpyAnalysis&>(other);
    for (size_t i = 0; i < dir_.size(); ++i) dir_[i].Add(o.dir_[i]);
  }

  void WriteJson(nlohmann::json& obj) const override {
    auto one = [](const Direction& d) {
      return nlohmann::json{{"count", d.count},
                            {"bytes", d.bytes},
                            {"total_s", Seconds(d.ns)},
                            {"gbps", d.gbps()},
                            {"pageable_count", d.pageable_count},
                            {"pageable_bytes", d.pageable_bytes},
                            {"blocking_count", d.blocking_count}};
    };
    obj["memcpy"] = {{"h2d", one(dir_[0])}, {"d2h", one(dir_[1])}};
  }

  void WriteText(std::string& out) const override {
    if (dir_[0].count == 0 && dir_[1].count == 0) {
      out += "  copies: none\n";
      return;
    }
    out += Printf("  %-7s %8s %11s %12s %9s %9s %9s\n", "copies", "calls", "bytes", "time",
                  "GB/s", "pageable", "blocking");
    static const char* kNames[] = {"H2D", "D2H"};
    for (size_t i = 0; i < dir_.size(); ++i) {
      const Direction& d = dir_[i];
      out += Printf("    %-5s %8llu %11s %12s %9s %9llu %9llu\n", kNames[i],
                    static_cast<unsigned long long>(d.count), FmtBytes(d.bytes).c_str(),
                    FmtDuration(Seconds(d.ns)).c_str(), FmtRate(d.gbps()).c_str(),
                    static_cast<unsigned long long>(d.pageable_count),
                    static_cast<unsigned long long>(d.blocking_count));
    }
  }

  std::string Headline() const override {
    return "H2D " + FmtBytes(dir_[0].bytes) + ", D2H " + FmtBytes(dir_[1].bytes);
  }

 private:
  std::array<Direction, 2> dir_{};  // [0] H2D, [1] D2H
};

}  // namespace

std::unique_ptr<RankAnalysis> MakeMemcpyAnalysis() { return std::make_unique<MemcpyAnalysis>(); }

}  // namespace gpuwatch::collector
