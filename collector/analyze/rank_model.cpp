// See rank_model.h.
#include "analyze/rank_model.h"

#include <algorithm>

#include "analyze/findings.h"
#include "analyze/sampled_estimate.h"
#include "analyze/what_if.h"

namespace gpuwatch::collector {

RankModel::RankModel(const RankModel& o)
    : interp_(o.interp_), sync_(o.sync_), copies_(o.copies_), collectives_(o.collectives_),
      coll_sizes_(o.coll_sizes_), pipeline_(o.pipeline_), comms_(o.comms_), overlap_(o.overlap_),
      launches_(o.launches_), gpu_(o.gpu_), graphs_(o.graphs_), api_calls_(o.api_calls_), streams_(o.streams_), steps_(o.steps_),
      io_(o.io_), sites_(o.sites_), memory_(o.memory_), device_(o.device_), host_frames_(o.host_frames_), sm_fill_(o.sm_fill_), step_graphs_(o.step_graphs_),
      rank_(o.rank_),
      host_(o.host_), state_(o.state_), flushed_(o.flushed_) {
  SubscribeAnalyses();
}

void RankModel::SubscribeAnalyses() {
  for (EventSink* s : std::initializer_list<EventSink*>{&sync_, &copies_, &collectives_, &comms_, &overlap_, &launches_, &gpu_, &graphs_,
                                                         &api_calls_, &steps_, &io_, &sites_, &memory_, &device_,
                                                         &host_frames_, &coll_sizes_, &pipeline_, &sm_fill_, &streams_, &step_graphs_})
    interp_.Subscribe(s);
  gpu_.UseCoverage(&interp_.coverage());  // this model's own (a copy subscribes again)
}

void RankModel::OnHello(const wire::Hello& h) {
  ++state_;
  rank_ = h.rank();
  host_ = h.host();
  device_.SetOwnPid(static_cast<uint32_t>(h.pid()));
  interp_.OnHello(h);
}

void RankModel::OnBatch(const wire::Batch& b) {
  ++state_;
  flushed_ = false;
  interp_.OnBatch(b);
}

void RankModel::OnGoodbye(const wire::Goodbye& g) {
  ++state_;
  interp_.OnGoodbye(g);
}

void RankModel::Flush() {
  ++state_;
  interp_.Flush();
  flushed_ = true;
}

const RankResult& RankModel::Result() const {
  if (cached_ && cached_state_ == state_) return *cached_;
  if (flushed_) {
    cached_ = Compute();
  } else {
    RankModel copy(*this);
    copy.interp_.Flush();
    cached_ = copy.Compute();
  }
  cached_state_ = state_;
  return *cached_;
}

RankResult RankModel::Compute() const {
  RankResult r;
  r.rank = rank_;
  r.host = host_;
  const RankFacts& facts = interp_.facts();
  r.host_calls = interp_.host_calls();
  r.host_first_ns = r.host_calls ? interp_.host_first_ns() : 0;
  r.host_last_ns = interp_.host_last_ns();
  r.sync = sync_.figures();
  r.copies = copies_.figures();
  r.collectives = collectives_.figures();
  r.coll_sizes = coll_sizes_.figures();
  r.pipeline = pipeline_.Result(facts);
  r.comms = comms_.Result(facts);
  r.overlap = overlap_.Result();
  for (CommFigures& c : r.comms.comms)
    if (auto it = r.overlap.by_comm.find(c.hash); it != r.overlap.by_comm.end()) {
      c.kernels = it->second.kernels;
      c.kernel_ns = it->second.nccl_ns;
      c.overlapped_ns = it->second.overlapped_ns;
    }
  r.launches = launches_.Result(facts);
  r.graphs = graphs_.figures();
  r.api_calls = api_calls_.figures();
  r.streams = streams_.figures();
  r.gpu = gpu_.Result(facts, interp_.sweep(), interp_.coverage(), r.host_first_ns, r.host_last_ns);
  EstimateSampledComm(r);  // the collectives' own GPU times, not the windows' kernels
  r.found = interp_.steps();
  r.steps = steps_.figures();
  // Steps (NVTX or inferred while the run went on) carry device figures when CUPTI recorded
  // some of them whole.
  r.per_step_device = std::any_of(r.steps.steps.begin(), r.steps.steps.end(),
                                                  [](const StepRec& s) { return s.covered; });
  if (!r.per_step_device) {  // inferred steps: boundaries only, figures are run averages
    const std::deque<StepRec> charged = std::move(r.steps.steps);
    r.steps.steps.clear();
    for (const StepMark& m : r.found.inferred) {
      StepRec s;
      s.start = m.start_ns;
      s.end = m.end_ns;
      // Its pace, where the charger saw the same step.
      const size_t k = r.steps.steps.size();
      if (k < charged.size() && charged[k].start == m.start_ns) s.done = charged[k].done;
      r.steps.steps.push_back(s);
    }
  }
  r.io = io_.figures();
  r.sites = sites_.Result(facts);
  r.host_frames = host_frames_.Result(facts);
  r.sampling = facts.sampling();
  r.env = facts.env();
  r.memory = memory_.Result(r.env);
  r.device = device_.figures();
  r.sm_fill = sm_fill_.Result(facts);
  r.device_sampler_detail = facts.device_sampler_detail();
  // A sampled timeline's series is empty outside CUPTI's windows: no shape to read. The
  // useful curve: NCCL kernels waiting for peers would read as a busy GPU.
  if (!r.gpu.coverage.sampled) {
    const auto& st = r.steps.steps;
    r.gpu_shape = st.empty() ? ClassifyUtilization(SeriesWindows(r.gpu.series, 0, 0, true), 0)
                             : ClassifyUtilization(SeriesWindows(r.gpu.series, st.front().start, st.back().end, true),
                                                   st.size());
  }
  r.dropped = facts.dropped();
  r.dropped_total = facts.dropped_total();
  r.overhead = facts.overhead();
  r.findings = RankFindings(r);
  r.per_step = MeanPerStep(r);
  r.step_graphs = step_graphs_.Graphs();
  ModelRankFixes(r.step_graphs, r);
  return r;
}

}  // namespace gpuwatch::collector
