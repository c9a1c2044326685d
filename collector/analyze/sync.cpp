// sync: host time spent blocked waiting for the GPU. Explicit synchronize calls, plus the
// copies that the library flagged FLAG_BLOCKED_HOST (every cudaMemcpy H2D/D2H, and a
// cudaMemcpyAsync on pageable memory): for the host those are a sync in disguise.
#include <array>

#include "analyze/analysis.h"
#include "analyze/api_names.h"
#include "report/format.h"

namespace gpuwatch::collector {
namespace {

// Printed in this order; only those that occurred.
constexpr std::array<wire::Api, 5> kSyncApis = {
    wire::CUDA_STREAM_SYNCHRONIZE, wire::CUDA_DEVICE_SYNCHRONIZE,
    wire::CUDA_EVENT_SYNCHRONIZE, wire::CUDA_MEMCPY, wire::CUDA_MEMCPY_ASYNC};

class SyncAnalysis final : public RankAnalysis {
 public:
  const char* name() const override { return "sync"; }

  void OnBatch(const wire::Batch& batch) override {
    for (const auto& e : batch.events()) {
      const int slot = Slot(e);
      if (slot < 0) continue;
      ++count_[slot];
      ns_[slot] += e.dur_ns();
    }
  }

  void Merge(const RankAnalysis& other) override {
    const auto& o = static_cast<const SyncAnalysis&>(other);
    for (size_t i = 0; i < kSyncApis.size(); ++i) {
      count_[i] += o.count_[i];
      ns_[i] += o.ns_[i];
    }
  }

  void WriteJson(nlohmann::json& obj) const override {
    nlohmann::json by_api = nlohmann::json::object();
    for (size_t i = 0; i < kSyncApis.size(); ++i) {
      if (count_[i] == 0) continue;
      by_api[ApiName(kSyncApis[i])] = {{"count", count_[i]}, {"total_s", Seconds(ns_[i])}};
    }
    obj["sync"] = {{"count", TotalCount()}, {"total_s", Seconds(TotalNs())}, {"by_api", by_api}};
  }

  void WriteText(std::string& out) const override {
    if (TotalCount() == 0) {
      out += "  sync: none\n";
      return;
    }
    out += Printf("  %-36s %9s %13s\n", "sync (host blocked on the GPU)", "calls", "time");
    for (size_t i = 0; i < kSyncApis.size(); ++i) {
      if (count_[i] == 0) continue;
      std::string label = ApiName(kSyncApis[i]);
      if (kSyncApis[i] == wire::CUDA_MEMCPY || kSyncApis[i] == wire::CUDA_MEMCPY_ASYNC)
        label += " (blocking)";
      out += Printf("    %-34s %9llu %13s\n", label.c_str(),
                    static_cast<unsigned long long>(count_[i]),
                    FmtDuration(Seconds(ns_[i])).c_str());
    }
    out += Printf("    %-34s %9llu %13s\n", "total", static_cast<unsigned long long>(TotalCount()),
                  FmtDuration(Seconds(TotalNs())).c_str());
  }

  std::string Headline() const override {
    return "sync " + FmtDuration(Seconds(TotalNs()));
  }

 private:
  static int Slot(const wire::Event& e) {
    switch (e.api()) {
      case wire::CUDA_STREAM_SYNCHRONIZE: return 0;
      case wire::CUDA_DEVICE_SYNCHRONIZE: return 1;
      case wire::CUDA_EVENT_SYNCHRONIZE: return 2;
      case wire::CUDA_MEMCPY: return HasFlag(e, wire::FLAG_BLOCKED_HOST) ? 3 : -1;
      case wire::CUDA_MEMCPY_ASYNC: return HasFlag(e, wire::FLAG_BLOCKED_HOST) ? 4 : -1;
      default: return -1;
    }
  }
  uint64_t TotalCount() const {
    uint64_t n = 0;
    for (auto c : count_) n += c;
    return n;
  }
  uint64_t TotalNs() const {
    uint64_t n = 0;
    for (auto c : ns_) n += c;
    return n;
  }

  std::array<uint64_t, kSyncApis.size()> count_{};
  std::array<uint64_t, kSyncApis.size()> ns_{};
};

}  // namespace

std::unique_ptr<RankAnalysis> MakeSyncAnalysis() { return std::make_unique<SyncAnalysis>(); }

}  // namespace gpuwatch::collector
