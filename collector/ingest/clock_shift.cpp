#include "ingest/clock_shift.h"

namespace gpuwatch::collector {

void ShiftHello(wire::Hello& hello, int64_t delta) {
  hello.set_start_ns(ShiftNs(hello.start_ns(), delta));
}

void ShiftFrame(wire::Frame& frame, int64_t delta) {
  if (delta == 0) return;
  switch (frame.body_case()) {
    case wire::Frame::kHello: ShiftHello(*frame.mutable_hello(), delta); break;
    case wire::Frame::kBatch: {
      wire::Batch& b = *frame.mutable_batch();
      for (wire::Event& e : *b.mutable_events()) e.set_t_ns(ShiftNs(e.t_ns(), delta));
      for (wire::Activity& a : *b.mutable_activities()) {
        a.set_start_ns(ShiftNs(a.start_ns(), delta));
        a.set_end_ns(ShiftNs(a.end_ns(), delta));
      }
      for (wire::ProcSample& p : *b.mutable_proc_samples()) p.set_t_ns(ShiftNs(p.t_ns(), delta));
      for (wire::DeviceSample& d : *b.mutable_device_samples()) d.set_t_ns(ShiftNs(d.t_ns(), delta));
      for (wire::HostSample& s : *b.mutable_host_samples()) s.set_t_ns(ShiftNs(s.t_ns(), delta));
      if (b.settled_ns()) b.set_settled_ns(ShiftNs(b.settled_ns(), delta));
      for (wire::CuptiWindow& w : *b.mutable_cupti_windows()) {
        w.set_start_ns(ShiftNs(w.start_ns(), delta));
        w.set_end_ns(ShiftNs(w.end_ns(), delta));
      }
      b.set_cupti_window_open_since_ns(ShiftNs(b.cupti_window_open_since_ns(), delta));
      b.set_cupti_ended_ns(ShiftNs(b.cupti_ended_ns(), delta));
      break;
    }
    case wire::Frame::kGoodbye: {
      wire::Goodbye& g = *frame.mutable_goodbye();
      g.set_end_ns(ShiftNs(g.end_ns(), delta));
      break;
    }
    case wire::Frame::kHeartbeat: {
      wire::Heartbeat& hb = *frame.mutable_heartbeat();
      hb.set_now_ns(ShiftNs(hb.now_ns(), delta));
      for (wire::InFlight& f : *hb.mutable_inside()) f.set_since_ns(ShiftNs(f.since_ns(), delta));
      break;
    }
    case wire::Frame::kRankDigest: {
      // Its times are inside the encoded figures: the shift travels with it and is applied
      // where it is decoded (ShiftRankResult).
      wire::RankDigest& d = *frame.mutable_rank_digest();
      d.set_shift_ns(d.shift_ns() + delta);
      break;
    }
    default: break;
  }
}

}  // namespace gpuwatch::collector
