// The host sampler's Python samples on a fake interpreter (tests/unit/inject/record/fake_python.h): a thread
// still inside the CUDA call it was in at its previous sample is not read again, and one
// that left it is.
#include <catch2/catch.hpp>

#include <vector>

#include "enrich/host_sampler.h"
#include "../record/fake_python.h"
#include "record/ring.h"
#include "record/safe_read.h"

namespace gi = gpuwatch::inject;
using namespace fakepy;  // NOLINT(google-build-using-namespace): the fake interpreter's builders

namespace {

int g_code_type;

// One pass of the sampler over `ring`: the sample it took, and how many reads of memory.
struct Pass {
  gi::HostSampler::Sample sample{};
  uint64_t reads = 0;
};
Pass SampleOnce(gi::HostSampler& sampler, gi::Ring& ring, uint64_t now_ns) {
  std::vector<gi::Ring*> rings{&ring};
  const uint64_t before = gi::SafeReadCallsForTest();
  sampler.SampleOnce(rings, now_ns);
  Pass p;
  p.reads = gi::SafeReadCallsForTest() - before;
  std::vector<gi::HostSampler::Sample> out;
  sampler.Drain(out);
  REQUIRE(out.size() == 1);
  p.sample = out[0];
  return p;
}

}  // namespace

TEST_CASE("host sampler: a thread inside the same CUDA call is not read again, one that left it is") {
  Arena a;
  const gi::PyLayout l = FakeLayout(reinterpret_cast<uintptr_t>(&g_code_type));
  uint8_t* outer = Frame(a, l, Code(a, l, "/home/u/train.py", "main", 10), 0, nullptr);
  uint8_t* step = Frame(a, l, Code(a, l, "/home/u/train.py", "step", 10), 2, outer);
  uint8_t* item = Frame(a, l, Code(a, l, "/home/u/train.py", "loss_item", 10), 2, step);
  uint8_t* backward = Frame(a, l, Code(a, l, "/home/u/train.py", "backward", 10), 2, step);
  const uintptr_t ts = ThreadState(a, l, item);

  gi::Ring ring(64);
  ring.tid.store(4242);
  ring.owner_alive.store(true);
  ring.py_thread_state.store(ts);
  gi::HostSampler sampler;
  sampler.UsePythonLayoutForTest(&l);

  // Not in a call: every sample reads the stack.
  const Pass free1 = SampleOnce(sampler, ring, 1), free2 = SampleOnce(sampler, ring, 2);
  CHECK(free1.reads > 0);
  CHECK(free2.reads > 0);
  CHECK(free1.sample.stack_id != 0);
  CHECK(free2.sample.stack_id == free1.sample.stack_id);
  CHECK_FALSE(free1.sample.in_cuda);

  // In a sync since stamp 1000: read once, then taken from that sample while the call lasts.
  ring.inflight.since_ticks.store(1000);
  const Pass sync1 = SampleOnce(sampler, ring, 3);
  CHECK(sync1.reads > 0);
  const Pass sync2 = SampleOnce(sampler, ring, 4), sync3 = SampleOnce(sampler, ring, 5);
  CHECK(sync2.reads == 0);
  CHECK(sync3.reads == 0);
  CHECK(sync2.sample.stack_id == sync1.sample.stack_id);
  CHECK(sync3.sample.stack_id == sync1.sample.stack_id);
  CHECK(sync3.sample.in_cuda);
  CHECK(sync3.sample.t_ns == 5);
  CHECK(sampler.totals().held_samples == 2);
  CHECK(sampler.totals().samples == 5);

  // The thread returned, ran other Python, and is in another call (stamp 1001): read again,
  // and the new stack is the one sampled.
  SetInnermost(l, ts, backward);
  ring.inflight.since_ticks.store(1001);
  const Pass next = SampleOnce(sampler, ring, 6);
  CHECK(next.reads > 0);
  CHECK(next.sample.stack_id != sync1.sample.stack_id);
  CHECK(next.sample.stack_id != 0);
  CHECK(SampleOnce(sampler, ring, 7).reads == 0);

  // Out of the call: read at every sample again.
  ring.inflight.since_ticks.store(0);
  CHECK(SampleOnce(sampler, ring, 8).reads > 0);
  CHECK(SampleOnce(sampler, ring, 9).reads > 0);
  CHECK(sampler.totals().held_samples == 3);
}
