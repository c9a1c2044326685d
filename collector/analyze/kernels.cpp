// kernels: host-side launch calls the library saw (cudaLaunchKernel and friends; launches
// made through driver entry points, e.g. by NCCL, cuBLASLt or Triton, are not among them),
// and the most launched kernels by name. Names arrive mangled; we demangle only the few
// that are printed.
#include "kernel_names.h"

#include <algorithm>
#include <cstdlib>
#include <unordered_map>

#include "analyze/analysis.h"
#include "report/format.h"

namespace gpuwatch::collector {
namespace {

// Bounds: distinct kernels tracked per rank (and per job), and the length kept of a name.
// Launches of kernels beyond the bound still count in `launches`.
constexpr size_t kMaxKernels = 10000;
constexpr size_t kMaxNameBytes = 4096;
constexpr size_t kTopN = 10;


class KernelsAnalysis final : public RankAnalysis {
 public:
  const char* name() const override { return "kernels"; }

  void OnBatch(const wire::Batch& batch) override {
    for (const auto& k : batch.kernel_names()) {
      if (names_.size() >= kMaxKernels && !names_.count(k.id())) continue;
      names_[k.id()] = k.name().substr(0, kMaxNameBytes);
    }
    for (const auto& e : batch.events()) {
      if (e.api() != wire::CUDA_LAUNCH_KERNEL) continue;
      ++launches_;
      auto it = by_id_.find(e.name_id());
      if (it != by_id_.end()) {
        ++it->second;
      } else if (by_id_.size() < kMaxKernels) {
        by_id_.emplace(e.name_id(), 1);
      }
    }
  }

  void Merge(const RankAnalysis& other) override {
    const auto& o = static_cast<const KernelsAnalysis&>(other);
    launches_ += o.launches_;
    for (const auto& [name, n] : o.ByName()) {
      auto it = by_name_.find(name);
      if (it != by_name_.end()) {
        it->second += n;
      } else if (by_name_.size() < kMaxKernels) {
        by_name_.emplace(name, n);
      }
    }
  }

  void WriteJson(nlohmann::json& obj) const override {
    nlohmann::json top = nlohmann::json::array();
    for (const auto& [name, n] : Top()) top.push_back({{"name", name}, {"launches", n}});
    obj["kernels"] = {{"launches", launches_}, {"top_launched", top}};
  }

  void WriteText(std::string& out) const override {
    out += Printf("  kernel launches (host calls seen): %llu\n",
                  static_cast<unsigned long long>(launches_));
    for (const auto& [name, n] : Top())
      out += Printf("    %9llu  %s\n", static_cast<unsigned long long>(n),
                    Clip(name, kTextWidth - 15).c_str());
  }

  std::string Headline() const override {
    return Printf("%llu launches", static_cast<unsigned long long>(launches_));
  }

 private:
  // Launches per (mangled) name; a kernel registered twice under one name counts once.
  std::unordered_map<std::string, uint64_t> ByName() const {
    std::unordered_map<std::string, uint64_t> m = by_name_;
    for (const auto& [id, n] : by_id_) {
      auto it = names_.find(id);
      m[it != names_.end() ? it->second : "kernel#" + std::to_string(id)] += n;
    }
    return m;
  }

  // Most launched first, ties by name, so the output is deterministic. Demangled.
  std::vector<std::pair<std::string, uint64_t>> Top() const {
    auto m = ByName();
    std::vector<std::pair<std::string, uint64_t>> v(m.begin(), m.end());
    const size_t n = std::min(kTopN, v.size());
    std::partial_sort(v.begin(), v.begin() + n, v.end(), [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    v.resize(n);
    for (auto& p : v) p.first = DemangleName(p.first);
    return v;
  }

  uint64_t launches_ = 0;
  std::unordered_map<uint32_t, std::string> names_;   // rank: id -> mangled name
  std::unordered_map<uint32_t, uint64_t> by_id_;      // rank: launches per name id
  std::unordered_map<std::string, uint64_t> by_name_; // job totals: launches per name
};

}  // namespace

std::unique_ptr<RankAnalysis> MakeKernelsAnalysis() { return std::make_unique<KernelsAnalysis>(); }

}  // namespace gpuwatch::collector
