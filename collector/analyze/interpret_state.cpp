// The checkpoint codec of the interpret stage (checkpoint_access.h): what a RankInterpreter
// holds between batches, facts and held events included. Each list carries its class's
// size: a member added later without its place in the list fails the build.
#include "analyze/checkpoint_access.h"

namespace gpuwatch::collector {

GW_STATE(HostCall, 160, t_ns, dur_ns, bytes, stream, comm_id, seq, gpu_ns, peer, tid, flags, name_id, site_id, address,
         total_bytes, api, copy_kind, sync_kind, blocks_host, captured, comm_nranks, comm_hash, comm_rank,
         comm_identified, coll_bytes, timed, recorded, past_timeline, calls, calls_ns)
GW_STATE(ApiSpan, 16, start_ns, end_ns)
GW_STATE(ThreadSample, 24, t_ns, tid, stack_id, in_cuda)
GW_STATE(SiteText, 80, python, python_stack, frames)
GW_STATE(DeviceSweep::Limits, 40, horizon_ns, max_pending, api_keep_ns, max_apis, max_syncs)
GW_STATE(RankFacts, 968, world_size_, names_, comm_kernel_, comms_, sites_, stacks_, native_blocked_in_, gpu_source_,
         gpu_source_detail_, device_sampler_detail_, env_, overhead_, sampling_, dropped_)
GW_STATE(HostOrder::Held, 168, key, call)
GW_STATE(HostOrder, 88, in_order_, late_, newest_, settled_, released_until_)
GW_STATE(PollFolder::Loop, 32, start, last_end, stream, api, open)
GW_STATE(PollFolder, 56, loops_)
GW_STATE(StepPattern::Anchor, 16, sig, t_ns)
GW_STATE(StepPattern, 224, window_limit_, max_period_, first_search_, anchors_end_steps_, boundary_mask_, boundary_sig_,
         window_, searched_, period_, phase_, seen_, boundaries_, fresh_, boundary_count_, last_boundary_,
         last_boundary_index_, stats_)

// StepFinder points at the pattern whose steps went out: saved as which one it is, after
// the members of this list.
#define GW_STEP_FINDER_STATE                                                                                  \
  step_range_, names_, step_name_id_, step_depth_, nvtx_, last_end_, coll_pattern_, sync_pattern_, launch_pattern_, \
      emitted_from_, last_enqueue_end_, last_host_end_, last_len_, flushed_, flushed_step_
void CheckpointAccess::Save(StateOut& o, const StepFinder& v) {
  GW_STATE_SIZE(StepFinder, 976)
  o.Array(1 NLOHMANN_JSON_EXPAND(NLOHMANN_JSON_PASTE(GW_STATE_ONE, GW_STEP_FINDER_STATE)));
  NLOHMANN_JSON_EXPAND(NLOHMANN_JSON_PASTE(GW_STATE_SAVE, GW_STEP_FINDER_STATE))
  const StepPattern* const patterns[] = {&v.coll_pattern_, &v.sync_pattern_, &v.launch_pattern_};
  int emitting = -1;
  for (int p = 0; p < 3; ++p)
    if (v.emitting_ == patterns[p]) emitting = p;
  o.Leaf(emitting);
}
void CheckpointAccess::Load(const json& j, StepFinder& v) {
  size_t i = 0;
  NLOHMANN_JSON_EXPAND(NLOHMANN_JSON_PASTE(GW_STATE_LOAD, GW_STEP_FINDER_STATE))
  StepPattern* const patterns[] = {&v.coll_pattern_, &v.sync_pattern_, &v.launch_pattern_};
  const int emitting = j.at(i).get<int>();
  if (emitting < -1 || emitting > 2) throw std::out_of_range("no such step pattern");
  v.emitting_ = emitting < 0 ? nullptr : patterns[emitting];
}

GW_STATE(DeviceSweep::Work, 72, start, end, bytes, corr, name_id, stream, device, graph_id, kind, copy_kind, pageable,
         geometry)
GW_STATE(DeviceSweep::Open, 24, on, start, end)
GW_STATE(DeviceSweep::ApiEntry, 24, span, claimed)
GW_STATE(DeviceSweep, 352, lim_, pending_, newest_ns_, swept_ns_, all_, noncomm_, resume_all_, resume_noncomm_, late_,
         overflow_, apis_, api_fifo_, syncs_)
GW_STATE(Coverage, 144, sampled_, kept_, open_since_, ended_, windows_, closed_ns_, first_start_, first_end_, last_end_)
// Not the subscribers (fanout_): the restored model has its own.
GW_STATE(RankInterpreter, 2656, facts_, host_, polls_, steps_, sweep_, coverage_, cupti_off_, host_seen_, host_calls_,
         host_first_, host_last_)


}  // namespace gpuwatch::collector
