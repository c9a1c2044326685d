// The checkpoint codec of the analyses (checkpoint_access.h): each counter's running
// figures and what it holds for events still to come, and the RankModel that wires them.
// Each list carries its class's size: a member added later without its place in the list
// fails the build.
#include "analyze/checkpoint_access.h"

namespace gpuwatch::collector {

void CheckpointAccess::Save(StateOut& o, const wire::ProcSample& v) {
  const std::string bytes = v.SerializeAsString();
  o.Leaf(json::binary(std::vector<uint8_t>(bytes.begin(), bytes.end())));
}
void CheckpointAccess::Load(const json& j, wire::ProcSample& v) {
  const auto& bytes = j.get_binary();
  if (!v.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw std::runtime_error("a process sample that does not decode");
}

GW_STATE(SyncCounter, 200, f_)
GW_STATE(CopyCounter, 216, f_)
GW_STATE(CollectiveCounter, 544, f_)
GW_STATE(CollectiveSizeCounter, 96, f_)
GW_STATE(PipelineCounter::Span, 16, start, end)
GW_STATE(PipelineCounter, 240, f_, recv_calls_, recv_kernels_, noncomm_end_)
GW_STATE(CommCounter, 96, t_, index_)
GW_STATE(CommOverlap::Pending, 24, start, end, hash)
GW_STATE(CommOverlap::Call, 16, t_ns, hash)
GW_STATE(CommOverlap, 352, f_, compute_, pending_, calls_, steps_, steps_seen_, held_)
GW_STATE(LaunchCounter, 88, launches_, launch_ns_, driver_launches_, by_id_)
GW_STATE(GpuCounter::Start, 45744, f, by_id, enqueues, enqueues_recorded, colls, device_end)
// Not coverage_: the restored model points it at its own interpreter's.
GW_STATE(GpuCounter, 91504, f_, first_, enqueues_, enqueues_recorded_, colls_, by_id_, start_)
GW_STATE(GraphCounter, 184, f_, last_corr_)
GW_STATE(ApiCallCounter, 56, f_)
GW_STATE(StreamCounter::Recorded, 16, stream, t_ns)
GW_STATE(StreamCounter::Wait, 24, awaited, record_ns, wait_ns)
GW_STATE(StreamCounter::Launch, 24, t_ns, end_ns, stream)
GW_STATE(StreamCounter::Work, 16, launch_ns, end_ns)
GW_STATE(StreamCounter::Track, 96, any, last_end, recent)
GW_STATE(StreamCounter, 432, f_, events_, waits_, untied_, stream_of_, handle_of_, tracks_)
GW_STATE(StepPace::Open, 32, start, end, dev_end, covered)
GW_STATE(StepPace, 360, open_, ahead_, closed_, done_, any_closed_, prev_start_, prev_done_, prev_dev_end_)
GW_STATE(StepCharger::Coll, 24, t_ns, gpu_ns, timed)
GW_STATE(StepCharger::Sync, 32, end_ns, ns, kind, work_ns)
GW_STATE(StepCharger, 976, f_, pace_, seen_, cursor_, stop_, pending_, mids_, graph_launches_, colls_,
         colls_taken_until_)
GW_STATE(InputIo::Interval, 72, t0, t1, cpu, wait, rchar, rbytes, periods, throttled_periods, throttled_ns)
GW_STATE(InputIo::Gap, 16, a, b)
GW_STATE(InputIo, 432, f_, have_prev_, prev_, samples_, gaps_)
GW_STATE(SiteCounter::Tally, 16, ns, count)
GW_STATE(SiteCounter, 64, by_id_)
GW_STATE(MemoryCounter, 2232, f_, live_)
GW_STATE(DeviceStateCounter, 504, f_, own_pid_, prev_ns_, util_sum_, mem_util_sum_, power_sum_, busy_clock_sum_,
         throttled_share_sum_, tx_sum_, rx_sum_, throttled_samples_, nvlink_seen_)
GW_STATE(HostFrames::Gap, 24, a, b, tid)
GW_STATE(HostFrames::Launch, 24, start_ns, end_ns, tid)
GW_STATE(HostFrames::Tallies, 112, known, unknown)
GW_STATE(HostFrames, 424, calls_by_tid_, samples_, gaps_, launches_, newest_sample_ns_, tally_)
GW_STATE(SmFillCounter::Tot, 16, count, ns)
GW_STATE(SmFillCounter, 56, shapes_)
GW_STATE(GraphNode, 64, start_ns, end_ns, release_ns, first_in, n_in, kind, sync_kind, last_sync, pageable, enqueue,
         launch, collective, lane, step, bytes, signature, join)
GW_STATE(GraphEdge, 16, from, kind, lag_ns)
GW_STATE(CommKey, 32, comm, seq, from, to, members)
GW_STATE(StepGraph, 112, start_ns, steps, nodes, edges, comm_min_ns, joins)
GW_STATE(GraphWork, 48, start_ns, end_ns, api_start_ns, api_end_ns, bytes, stream, copy, comm, pageable)
GW_STATE(StepGraphs::Chunk, 72, steps, works_end, taken, from_ns, calls)
GW_STATE(StepGraphs, 408, p2p_count_, calls_, works_, open_, open_sampled_, closed_, graphs_, chunks_, stride_, last_end_,
         lookback_ns_, steps_seen_, sampled_steps_, sampled_chunks_)
// Not the cached result: it is computed again from the state.
GW_STATE(RankModel, 153400, interp_, sync_, copies_, collectives_, coll_sizes_, pipeline_, comms_, overlap_, launches_, gpu_,
         graphs_, api_calls_, streams_, steps_, io_, sites_, memory_, device_, host_frames_, sm_fill_, step_graphs_,
         rank_, host_, state_, flushed_)


}  // namespace gpuwatch::collector
