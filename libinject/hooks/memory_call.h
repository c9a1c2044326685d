// One allocation or free, timed and recorded: the runtime's (hooks_memory.cpp) and the
// driver's (hooks_driver_memory.cpp) take the same path, so the collector's live set
// (collector/analyze/memory.cpp) sees both alike. One record per successful call: size and
// address (for a free, the address alone), nothing else.
#pragma once
#include <cstdint>

#include "record/recorder.h"
#include "record/stamp_clock.h"

namespace gpuwatch::inject::hooks {

// Times `call` and emits its record when it returned `ok`. `address()` is read after the
// call: the new allocation's address (or handle), or the one freed; 0 records nothing
// (cudaFree(nullptr) is the classic "create the context" call). Frees synchronize the device
// (a cudaFree waits for all of its work), so every memory call is marked in flight.
template <typename R, typename Call, typename Address>
R MemoryCall(Api api, uint64_t stream, R ok, uint64_t bytes, Call&& call, Address&& address) {
  if (!Recording()) return call();
  EnsureRing();
  const HookCostProbe cost;  // these calls count among the hooked ones the budget charges
  Record r{};
  r.t_ticks = Stamp();
  EnterCall(api, r.t_ticks, stream);
  const R rc = call();
  r.dur_ticks = cost.StampCallEnd() - r.t_ticks;
  r.api = api;
  r.stream = stream;
  r.bytes = bytes;
  r.seq = rc == ok ? address() : 0;
  if (r.seq != 0) Emit(r);
  LeaveCall();
  cost.Done(r);
  return rc;
}

}  // namespace gpuwatch::inject::hooks
