// dropped: records the library lost, per reason. The library reports cumulative totals
// (in every Batch and in the Goodbye), so we keep the largest value seen per reason rather
// than summing — a repeated total must not be counted twice.
#include <map>

#include "analyze/analysis.h"
#include "report/format.h"

namespace gpuwatch::collector {
namespace {

// Distinct reasons kept; the library has a handful, this only guards against nonsense.
constexpr size_t kMaxReasons = 64;
constexpr size_t kMaxReasonBytes = 64;

class DroppedAnalysis final : public RankAnalysis {
 public:
  const char* name() const override { return "dropped"; }

  void OnBatch(const wire::Batch& batch) override {
    for (const auto& d : batch.dropped()) Note(d);
  }
  void OnGoodbye(const wire::Goodbye& g) override {
    for (const auto& d : g.dropped()) Note(d);
  }

  void Merge(const RankAnalysis& other) override {
    const auto& o = static_cast<const DroppedAnalysis&>(other);
    for (const auto& [reason, n] : o.by_reason_) {
      if (by_reason_.size() < kMaxReasons || by_reason_.count(reason)) by_reason_[reason] += n;
    }
  }

  void WriteJson(nlohmann::json& obj) const override {
    nlohmann::json d = nlohmann::json::object();
    for (const auto& [reason, n] : by_reason_) d[reason] = n;
    obj["dropped"] = d;
    obj["dropped_total"] = Total();
  }

  void WriteText(std::string& out) const override {
    if (Total() == 0) {
      out += "  dropped: none\n";
      return;
    }
    std::string line = Printf("  dropped: %llu (", static_cast<unsigned long long>(Total()));
    bool first = true;
    for (const auto& [reason, n] : by_reason_) {
      if (n == 0) continue;
      std::string part = Printf("%s%s %llu", first ? "" : ", ", Clip(reason, 32).c_str(),
                                static_cast<unsigned long long>(n));
      if (line.size() + part.size() + 1 > kTextWidth) {
        out += line + "\n";
        line = "    ";
        part = part.substr(first ? 0 : 2);
      }
      line += part;
      first = false;
    }
    out += line + ")\n";
  }

  std::string Headline() const override {
    return Printf("%llu dropped", static_cast<unsigned long long>(Total()));
  }

 private:
  void Note(const wire::DropCount& d) {
    const std::string reason = d.reason().substr(0, kMaxReasonBytes);
    auto it = by_reason_.find(reason);
    if (it == by_reason_.end()) {
      if (by_reason_.size() >= kMaxReasons) return;
      it = by_reason_.emplace(reason, 0).first;
    }
    if (d.count() > it->second) it->second = d.count();
  }
  uint64_t Total() const {
    uint64_t t = 0;
    for (const auto& [r, n] : by_reason_) t += n;
    return t;
  }

  std::map<std::string, uint64_t> by_reason_;  // ordered: deterministic output
};

}  // namespace

std::unique_ptr<RankAnalysis> MakeDroppedAnalysis() { return std::make_unique<DroppedAnalysis>(); }

}  // namespace gpuwatch::collector
