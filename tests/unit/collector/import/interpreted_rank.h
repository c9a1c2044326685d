// A RankDirectory for tests that keeps what the interpret stage made of an imported rank:
// every device work item with its launching call (also as the step graph keeps it), the host
// calls, the steps, and the GPU-side sync records as the importer sent them (the
// interpreter does not emit those). The same RankInterpreter
// the collector runs, fed the same frames.
#pragma once
#include <string>
#include <vector>

#include "analyze/step_graph_builder.h"
#include "import/rank_import.h"
#include "interpret/rank_interpreter.h"

namespace gwtest {

namespace col = gpuwatch::collector;
namespace wire = gpuwatch::wire;

struct SeenWork {
  uint64_t start_ns, end_ns, api_start_ns;  // api_start_ns 0: launching call unknown
  uint32_t stream;
  bool kernel, comm;
};
struct SeenSync {
  uint64_t start_ns, end_ns;
  uint32_t stream;
};

class InterpretedRank final : public col::RankDirectory, col::RankSink, col::EventSink {
 public:
  std::vector<SeenWork> work;
  std::vector<col::GraphWork> graph_work;
  std::vector<col::HostCall> calls;
  std::vector<SeenSync> syncs;
  std::vector<col::StepMark> steps;

  // RankDirectory
  col::RankSink* Attach(const wire::Hello& hello, std::string*) override {
    hello_ = hello;
    interp_.Subscribe(this);
    interp_.OnHello(hello);
    return this;
  }
  void Detach(const std::string&, col::RankSink*, bool, col::Clock::time_point) override { interp_.Flush(); }
  std::string OutDir(const std::string&, const std::string& o) const override { return o; }
  // RankSink
  const wire::Hello& hello() const override { return hello_; }
  void OnBatch(const wire::Batch& b) override {
    for (const auto& a : b.activities())
      if (a.kind() == wire::ACTIVITY_SYNC) syncs.push_back({a.start_ns(), a.end_ns(), a.stream()});
    interp_.OnBatch(b);
  }
  void OnGoodbye(const wire::Goodbye& g) override { interp_.OnGoodbye(g); }
  void OnHeartbeat(const wire::Heartbeat&, col::Clock::time_point) override {}
  bool OnDigest(const wire::RankDigest&, std::string*) override { return false; }
  col::JournalWriter* journal() const override { return nullptr; }
  void set_journal(std::unique_ptr<col::JournalWriter>) override {}
  col::RankStorage& storage() override { return storage_; }
  // EventSink
  void OnHostCall(const col::HostCall& c) override { calls.push_back(c); }
  void OnDeviceWork(const col::DeviceWork& w) override {
    if (col::IsDeviceWork(w.kind)) graph_work.push_back(col::GraphWorkOf(w));
    work.push_back({w.start_ns, w.end_ns, w.api ? w.api->start_ns : 0, w.stream,
                    w.kind == wire::ACTIVITY_KERNEL, w.comm});
  }
  void OnStep(const col::StepMark& s) override { steps.push_back(s); }
  void OnStepsReset() override { steps.clear(); }

 private:
  wire::Hello hello_;
  col::RankInterpreter interp_;
  col::RankStorage storage_;
};

}  // namespace gwtest
