// summary.json's sections of parallel strategies (docs/summary-schema.md): `pipeline`
// (send/recv per peer, the bubble; the job's matched links and stages) and
// `small_collectives`.
#include "common/format.h"
#include "report/figures_json.h"

namespace gpuwatch::collector {

nlohmann::json PipelineJson(const PipelineFigures& p) {
  nlohmann::json peers = nlohmann::json::array();
  for (const P2pLink& l : p.links)
    peers.push_back({{"direction", l.send ? "send" : "recv"},
                     {"peer", l.peer},
                     {"count", l.count},
                     {"bytes", l.bytes},
                     {"gpu_s", Seconds(l.gpu_ns)},
                     {"no_gpu_time_count", l.count - l.timed}});
  return {{"stage", p.stage() >= 0 ? nlohmann::json(p.stage()) : nlohmann::json(nullptr)},
          {"stages", p.stages()},
          {"bubble_s", Seconds(p.bubble_ns)},
          {"recv_kernels", p.recv_kernels},
          {"recv_kernel_s", Seconds(p.recv_kernel_ns)},
          {"grouped_calls", p.grouped_calls},
          {"dropped_calls", p.links_dropped},
          {"peers", peers}};
}

nlohmann::json JobPipelineJson(const PipelineFigures& sums, const JobPipeline& jp) {
  nlohmann::json out = PipelineJson(sums);
  out.erase("peers");
  out["stage"] = nullptr;
  out["stages"] = jp.stages.size();
  nlohmann::json links = nlohmann::json::array(), stages = nlohmann::json::array();
  for (const PipelineLink& l : jp.links)
    links.push_back({{"from", l.from},
                     {"to", l.to},
                     {"sends", l.sends},
                     {"recvs", l.recvs},
                     {"bytes_sent", l.bytes_sent},
                     {"bytes_received", l.bytes_received},
                     {"matched", l.matched},
                     {"recv_wait_s", l.recv_wait_s},
                     {"send_wait_s", l.send_wait_s}});
  for (const PipelineStage& s : jp.stages)
    stages.push_back({{"stage", s.stage}, {"ranks", s.ranks}, {"bubble_s", s.bubble_s}, {"wait_s", s.wait_s},
                      {"caused_s", s.caused_s}});
  out["links"] = links;
  out["by_stage"] = stages;
  return out;
}

nlohmann::json SmallCollectivesJson(const CollectiveSizeFigures& c) {
  return {{"threshold_bytes", c.threshold_bytes},
          {"count", c.small_calls},
          {"bytes", c.small_bytes},
          {"gpu_s", Seconds(c.small_ns)},
          {"latency_us", c.min_call_ns * 1e-3},
          {"excess_latency_s", Seconds(c.ExcessLatencyNs())},
          {"large_count", c.large_calls},
          {"large_busbw_gbps", c.large_busbw_gbps()}};
}

}  // namespace gpuwatch::collector
