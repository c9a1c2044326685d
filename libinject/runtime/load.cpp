// What happens when the library loads: the recorder learns how to start the sender, and a
// program linked against the CUDA runtime gets its sender thread and CUPTI now. Part of
// libgpuwatch.so itself (CMakeLists.txt): nothing else refers to it.
#include <dlfcn.h>
#include <pthread.h>

#include "enrich/cupti_reader.h"
#include "hooks/weak_refs.h"
#include "record/hook_ab.h"
#include "record/real.h"
#include "record/recorder.h"
#include "record/stamp_clock.h"
#include "runtime/config.h"
#include "runtime/sender.h"
#include "transport/identity.h"

namespace gpuwatch::inject {
namespace {

// As a source of the .so it runs before the dynamic initializers of the archive's files
// (link order): what it reaches is constant-initialized, a function-local static, or set in
// a constructor of higher priority (the stamp's source, record/stamp_clock.cpp).
//
// A program linked against the CUDA runtime will call it: start the sender thread now
// rather than inside its first CUDA call. Programs that are not (shells, compilers, Python
// before it imports torch) get no thread; nothing connects anywhere before a first record.
__attribute__((constructor)) void AtLoad() {
  const uint64_t t0 = NowNs();
  // First, even when gpuwatch is off: a probe for an absent runtime must read null.
  hooks::ClearWeakRefsToAbsent();
  RecorderSetup setup;
  setup.ring_records = GetConfig().ring_records;
  setup.start = StartSender;
  setup.first_record = OnFirstRecord;
  SetUpRecorder(setup);
  pthread_atfork(nullptr, nullptr, OnForkChild);
  if (GetConfig().disabled) return;
  // Every process of the job must name the same job, whatever its parent: the first one
  // (no job id given) writes its id into its environment now, in the constructor, while
  // the program has no other thread and before its code can read or copy the environment;
  // its children, spawned or exec'd at any depth, inherit it (transport/identity.h).
  HandJobIdToChildren();
  for (const char* lib : {"libcudart.so", "libnccl.so"}) {
    if (LoadedLibrary(lib)) {
      if (!StartSender()) {
        TurnOff();
        return;
      }
      // CUPTI now, so the timeline has the program's first GPU work too.
      Cupti().Start();
      // A spare ring for the first thread that records, made now: made inside that
      // thread's first call (as when the sender thread made it, and was not scheduled before
      // main() called CUDA on a loaded machine), its page faults land inside a hooked call
      // the hook does not time (an e2e host-time check read 0.8 ms for the driver's 5 ms).
      PrepareFirstRing();
      StartHookAb();  // nothing, but in the bench build (record/hook_ab.h)
      AddStartupNs(NowNs() - t0);  // what the program's start waited for
      return;
    }
  }
}

}  // namespace
}  // namespace gpuwatch::inject
