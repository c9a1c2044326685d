// Per-stream figures (analyze/streams.h) on made-up calls and work: handles tied to CUPTI's
// stream ids by the launching call's span, a gap split into stream_wait (until the awaited
// stream's work ended) and host_wait, a wait on an event recorded on the same stream or
// never recorded ignored.
#include <catch2/catch.hpp>

#include "analyze/streams.h"

namespace col = gpuwatch::collector;
namespace wire = gpuwatch::wire;

namespace {

constexpr uint64_t kUs = 1000;
constexpr uint64_t kCompute = 0xA0, kSide = 0xB0;  // stream handles
constexpr uint64_t kEvent = 0xE0;

col::HostCall Call(wire::Api api, uint64_t t_us, uint64_t stream, uint64_t event = 0) {
  col::HostCall c{};
  c.api = api;
  c.t_ns = t_us * kUs;
  c.dur_ns = 4 * kUs;
  c.stream = stream;
  c.seq = event;
  return c;
}

// A kernel on CUPTI stream `id`, launched by a call at `launch_us` (its CUPTI span inside it).
struct Kernel {
  col::ApiSpan span;
  col::DeviceWork w{};
  Kernel(uint32_t id, uint64_t launch_us, uint64_t start_us, uint64_t end_us) {
    span = {launch_us * kUs + kUs, launch_us * kUs + 3 * kUs};
    w.kind = wire::ACTIVITY_KERNEL;
    w.stream = id;
    w.start_ns = start_us * kUs;
    w.end_ns = end_us * kUs;
    w.api = &span;
  }
};

}  // namespace

TEST_CASE("collector: a stream waiting for another stream's work is stream_wait, the rest host_wait") {
  col::StreamCounter s;
  // compute (CUPTI 7): a kernel [10, 100); side (CUPTI 8) waits for it, runs [100, 400);
  // compute waits for side, its next kernel was launched at 50 and starts at 400.
  s.OnHostCall(Call(wire::CUDA_LAUNCH_KERNEL, 0, kCompute));
  s.OnHostCall(Call(wire::CUDA_EVENT_RECORD, 5, kCompute, kEvent));
  s.OnHostCall(Call(wire::CUDA_STREAM_WAIT_EVENT, 10, kSide, kEvent));
  s.OnHostCall(Call(wire::CUDA_LAUNCH_KERNEL, 20, kSide));
  s.OnHostCall(Call(wire::CUDA_EVENT_RECORD, 30, kSide, kEvent));
  s.OnHostCall(Call(wire::CUDA_STREAM_WAIT_EVENT, 40, kCompute, kEvent));
  s.OnHostCall(Call(wire::CUDA_LAUNCH_KERNEL, 50, kCompute));
  // A wait on the stream's own event and on an event never recorded: no dependency.
  s.OnHostCall(Call(wire::CUDA_EVENT_RECORD, 60, kCompute, 0xE1));
  s.OnHostCall(Call(wire::CUDA_STREAM_WAIT_EVENT, 61, kCompute, 0xE1));
  s.OnHostCall(Call(wire::CUDA_STREAM_WAIT_EVENT, 62, kCompute, 0xE2));
  // compute's third kernel: launched at 900, long after its second ended (500): host_wait.
  s.OnHostCall(Call(wire::CUDA_LAUNCH_KERNEL, 900, kCompute));

  s.OnDeviceWork(Kernel(7, 0, 10, 100).w);
  s.OnDeviceWork(Kernel(8, 20, 100, 400).w);
  s.OnDeviceWork(Kernel(7, 50, 400, 500).w);
  s.OnDeviceWork(Kernel(7, 900, 905, 910).w);

  const col::StreamFigures& f = s.figures();
  CHECK(f.waits == 2);
  CHECK(f.waits_unresolved == 0);
  REQUIRE(f.by_stream.count(7));
  REQUIRE(f.by_stream.count(8));
  const auto& compute = f.by_stream.at(7);
  CHECK(compute.work == 3);
  CHECK(compute.busy_ns == 195 * kUs);
  CHECK(compute.idle_ns[col::kStreamWait] == 300 * kUs);    // [100, 400): side's kernel
  CHECK(compute.idle_ns[col::kStreamHostWait] == 405 * kUs);  // [500, 905): not launched yet
  CHECK(compute.idle_ns[col::kStreamOther] == 0);
  CHECK(compute.waits == 1);
  const auto& side = f.by_stream.at(8);
  CHECK(side.work == 1);
  CHECK(side.IdleTotal() == 0);  // its first work: no gap before it is counted
  CHECK(side.waits == 1);
}

TEST_CASE("collector: a wait whose awaited work ended before the gap leaves the gap to its other causes") {
  col::StreamCounter s;
  s.OnHostCall(Call(wire::CUDA_LAUNCH_KERNEL, 0, kSide));
  s.OnHostCall(Call(wire::CUDA_EVENT_RECORD, 5, kSide, kEvent));
  s.OnHostCall(Call(wire::CUDA_LAUNCH_KERNEL, 10, kCompute));
  s.OnHostCall(Call(wire::CUDA_STREAM_WAIT_EVENT, 20, kCompute, kEvent));
  s.OnHostCall(Call(wire::CUDA_LAUNCH_KERNEL, 30, kCompute));
  s.OnDeviceWork(Kernel(8, 0, 5, 50).w);      // side: done at 50
  s.OnDeviceWork(Kernel(7, 10, 15, 100).w);   // compute: ends at 100, after side's
  s.OnDeviceWork(Kernel(7, 30, 120, 130).w);  // launched at 30, before the gap: other
  const auto& compute = s.figures().by_stream.at(7);
  CHECK(compute.idle_ns[col::kStreamWait] == 0);
  CHECK(compute.idle_ns[col::kStreamOther] == 20 * kUs);
  CHECK(compute.waits == 1);
}
