// CUPTI loaded, its activity buffers handled and parsed, its clock mapped onto CLOCK_MONOTONIC.
#include "enrich/cupti_reader.h"

#include <cupti.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <vector>

#include "enrich/cupti_kinds.h"
#include "enrich/cupti_records.h"
#include "enrich/window_work.h"
#include "record/collective_timer.h"
#include "record/recorder.h"
#include "record/stamp_clock.h"

namespace gpuwatch::inject {
namespace {

constexpr size_t kBufferBytes = 4u << 20;
constexpr size_t kMaxBuffers = 16;  // 64 MiB at most in CUPTI's hands and ours
constexpr int64_t kOffsetHysteresisNs = 2000;
// A closed window's kinds are off at least this long before CUPTI is detached, so that the
// device finishes the window's last work and its records come back whole: one sender cycle,
// in practice, which is enough where the queue is short (launch-bound). Where it is not
// (GPU-bound: the window's last launches run up to the queue's length later), the detach
// waits until the window's work is back (enrich/window_work.h): CUPTI has handed back the
// API record of the last enqueueing call the hooks saw return in the window, and a device
// record for every API record of the window. Where that count cannot be kept (graphs, API
// records of every call, more work in flight than it holds), it waits as it did before the
// count: until a call that waited for the queue returned (a sync entered after the close),
// or for the longest completion lag the records showed, a quarter more. Either way at most
// kMaxDetachWaitNs. Detached sooner, CUPTI would hand that work back without times (counted
// as gpu_records_incomplete) and the windows' device figures would fall short; the wait
// costs a GPU-bound job nothing, its host being ahead of its device. (The lag alone read a
// loaded run's queue short: 1329 of 80000 kernels lost in one CI run.)
constexpr uint64_t kDetachGraceNs = 5'000'000;
constexpr uint64_t kMaxDetachWaitNs = 1'000'000'000;
// The hooks' start of a call against CUPTI's API record of it (which starts inside the call):
// the two clocks' mapping is good to a few us (Calibrate).
constexpr uint64_t kCallClockSlackNs = 20'000;
// How long the work of calls made as a window's kinds went off is waited for, once the
// window's other work is back (WindowWork::late).
constexpr uint64_t kLateWorkWaitNs = 20'000'000;

// Between the budget's windows CUPTI is detached (cuptiFinalize), not only disabled: on an
// H200 a disabled CUPTI still cost a launch 1.3-1.6 us of the 5.3 it cost recording, for
// the rest of the run (tests/device/cupti_linger.py). cuptiFinalize is safe at the exit of a
// CUDA call, so the sender arms a callback and the job's next CUDA call detaches it there.
enum DetachState : int {
  kAttached = 0,    // CUPTI attached (recording or not)
  kArmed = 1,       // the sender subscribed DetachAtExit: the next call's exit detaches
  kFinalizing = 2,  // a job's thread is inside cuptiFinalize
  kDetached = 3,    // CUPTI detached: no cost; any CUPTI call would attach it again
};


struct CuptiState {
  // Held around turning kinds on or off (the budget's windows, a hand-over), so a window
  // never turns them back on after the application's profiler took CUPTI. Taken before mu.
  std::mutex control;
  std::mutex mu;  // guards everything below; never held while calling into CUPTI
  bool started = false;
  // When an application profiler took CUPTI (or it could not be attached again): gpuwatch's
  // device timeline ends there; 0: it has not.
  uint64_t handed_over_ns = 0;
  bool handed_over() const { return handed_over_ns != 0; }
  bool recording = true;     // the kinds are enabled (the overhead budget turns them off between windows)
  bool hw_trace = false;
  bool app_active = false;   // ... before gpuwatch started
  CUpti_BuffersCallbackRequestFunc app_request = nullptr;
  CUpti_BuffersCallbackCompleteFunc app_complete = nullptr;
  CuptiReader::Source source = CuptiReader::Source::kUnknown;
  std::string detail;
  CuptiApi api{};
  std::deque<std::pair<uint8_t*, size_t>> completed;  // buffer, valid bytes
  std::vector<uint8_t*> free_buffers;
  std::vector<uint8_t*> lent;  // in CUPTI's hands: ours again when cuptiFinalize forgot them
  size_t buffers = 0;
  uint64_t incomplete = 0;     // device records without times (ParseActivityBuffer)
  // CLOCK_MONOTONIC = CUPTI time - offset; refreshed by the sender thread.
  std::atomic<int64_t> offset{0};
  uint64_t last_calibration_ns = 0;
  uint64_t last_flush_ns = 0;
  uint64_t started_ns = 0;
  // Detaching between windows (DetachState). `detach` and the two counts are read by the
  // job's threads in DetachAtExit; the rest is the sender's, under `control`.
  std::atomic<int> detach{kAttached};
  std::atomic<uint64_t> detaches{0}, detach_ns{0};  // cuptiFinalize calls, their time on the job's threads
  std::atomic<uint64_t> detached_at_ns{0};  // when the latest cuptiFinalize returned
  CUpti_SubscriberHandle detach_subscriber = nullptr;
  bool detach_off = false;      // GPUWATCH_CUPTI_DETACH=0, or this CUPTI cannot
  uint64_t disabled_ns = 0;     // when the kinds went off (0: recording)
  // CUPTI attached with its kinds off (CuptiReader::LingerSpans): [0] the latest, [1] the one
  // before; the latest ends at the detach, the next window, or a hand-over.
  CuptiReader::LingerSpans linger;
  bool detach_tried = false;    // for this closed window (a refused subscribe is not retried)
  uint64_t queue_drained_ns = 0;  // the latest start of a returned call that waited for the queue
  // The kinds were on throughout [recorded_from_ns, kinds_off_ns) (kinds_off_ns: UINT64_MAX
  // while they are): stamped after turning them on, and before turning them off.
  uint64_t recorded_from_ns = 0, kinds_off_ns = UINT64_MAX;
  // The latest start of an enqueueing call the hooks saw made wholly in that span: CUPTI
  // recorded it, and the window's work is not all back before its API record is.
  uint64_t last_recorded_enqueue_ns = 0;
  WindowWork work;              // the records parsed since the window opened (sender thread)
  uint64_t flushed_ns = 0;      // the latest unforced flush, its buffers parsed since
  uint64_t work_back_ns = 0;    // when the closed window's work was back but the late calls' (0: not yet)
  // Wait for the window's work by its count (WindowWork); false once a window's count never
  // came to an end within kMaxDetachWaitNs (a call CUPTI does not record, or records no work
  // for): the lag and the syncs from then on.
  bool count_work = true;
  // The enqueueing calls whose API records the runtime and driver kinds stand for (empty:
  // whole kinds), and the API and work records parsed so far: a CUPTI that took the choice
  // and then recorded none of those calls gets whole kinds (CheckApiRecords).
  ApiRecordSelection api_records;
  uint64_t api_records_seen = 0, work_records_seen = 0;
};

CuptiState& S() {
  static CuptiState* s = new CuptiState;  // leaked: CUPTI may call back during exit
  return *s;
}

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  CuptiState& s = S();
  *max_records = 0;
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.free_buffers.empty()) {
    s.lent.push_back(s.free_buffers.back());
    *buffer = s.free_buffers.back();
    s.free_buffers.pop_back();
  } else if (s.buffers < kMaxBuffers) {
    *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
    if (*buffer) {
      ++s.buffers;
      s.lent.push_back(*buffer);
    }
  } else {
    *buffer = nullptr;  // bounded: CUPTI drops and counts records until we return buffers
  }
  *size = *buffer ? kBufferBytes : 0;
}

void CUPTIAPI BufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CuptiState& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  s.completed.emplace_back(buffer, valid);
  s.lent.erase(std::remove(s.lent.begin(), s.lent.end(), buffer), s.lent.end());
}

// A job's thread at the exit of a CUDA call, with the detach armed: detaches CUPTI (once,
// whichever thread comes first) and times it, as the budget's cost.
void CUPTIAPI DetachAtExit(void*, CUpti_CallbackDomain domain, CUpti_CallbackId, const void* data) {
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  if (!data || static_cast<const CUpti_CallbackData*>(data)->callbackSite != CUPTI_API_EXIT) return;
  // Recording is off once the job's exit has run gpuwatch's atexit flush: threads still in
  // CUDA calls while another ran exit() come here after libraries' destructors ran, CUPTI's
  // too; finalizing it then is not safe.
  if (g_state.load(std::memory_order_acquire) == static_cast<int>(State::kOff)) return;
  CuptiState& s = S();
  int armed = kArmed;
  if (!s.detach.compare_exchange_strong(armed, kFinalizing, std::memory_order_acq_rel)) return;
  const uint64_t t0 = NowNs();
  s.api.finalize();  // s.api is set before the first arming and never changes after
  const uint64_t t1 = NowNs();
  s.detach_ns.fetch_add(t1 - t0, std::memory_order_relaxed);
  s.detached_at_ns.store(t1, std::memory_order_release);
  s.detaches.fetch_add(1, std::memory_order_relaxed);
  s.detach.store(kDetached, std::memory_order_release);
}

// Both API kinds are among GPUWATCH_CUPTI_KINDS: every enqueueing call, through the runtime
// or the driver, has its API record (a window's work is counted by them).
bool RecordsApiCalls() {
  const auto& k = Kinds();
  return std::find(k.begin(), k.end(), CUPTI_ACTIVITY_KIND_RUNTIME) != k.end() &&
         std::find(k.begin(), k.end(), CUPTI_ACTIVITY_KIND_DRIVER) != k.end();
}

// When CUPTI was detached, if it is detached and was so after `since`; else 0.
uint64_t DetachedAfter(const CuptiState& s, uint64_t since) {
  if (s.detach.load(std::memory_order_acquire) != kDetached) return 0;
  const uint64_t at = s.detached_at_ns.load(std::memory_order_acquire);
  return at >= since ? at : 0;
}

// `mu` held: the latest lingering span ends at `now`, or where CUPTI was detached before.
void EndLinger(CuptiState& s, uint64_t now) {
  if (s.linger.from[0] == 0 || s.linger.to[0] != UINT64_MAX) return;
  const uint64_t detached = DetachedAfter(s, s.linger.from[0]);
  s.linger.to[0] = detached ? detached : now;
}

// Sender thread, no lock held, records just parsed. CUPTI took the choice of calls and has
// since recorded work but none of the calls that enqueued it: a CUPTI that accepts the choice
// and ignores it. API records of every call from now on, as without a choice (the launch ties
// are worth more than the records they cost).
void CheckApiRecords(CuptiState& s) {
  constexpr uint64_t kEnoughWork = 64;
  std::lock_guard<std::mutex> control(s.control);
  CuptiApi api;
  ApiRecordSelection chosen;
  bool recording;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    // Both domains chosen: with one of them whole or not wanted (GPUWATCH_CUPTI_KINDS), the
    // work may all come from the other's calls, and no record of them is no sign.
    if (s.api_records.runtime.empty() || s.api_records.driver.empty() || s.api_records_seen > 0 ||
        s.work_records_seen < kEnoughWork)
      return;
    chosen = s.api_records;
    s.api_records = {};
    s.detail += "; API records of every call (none came for the enqueueing calls alone)";
    recording = s.recording && !s.handed_over() && s.detach.load(std::memory_order_acquire) == kAttached;
    api = s.api;
  }
  if (recording) SwitchToWholeApiKinds(api, chosen);  // else the next window turns them on
}

// Sender thread, `control` held. The armed detach taken back (the subscriber given up), or
// a detach under way waited out (a job's thread is inside cuptiFinalize: a few ms at most;
// false if not done within 2 s).
bool Disarm(CuptiState& s) {
  int armed = kArmed;
  if (s.detach.compare_exchange_strong(armed, kAttached, std::memory_order_acq_rel)) {
    s.api.unsubscribe(s.detach_subscriber);
    s.detach_subscriber = nullptr;
    return true;
  }
  for (int i = 0; i < 20000 && s.detach.load(std::memory_order_acquire) == kFinalizing; ++i) usleep(100);
  return s.detach.load(std::memory_order_acquire) != kFinalizing;
}

// Sender thread, `control` held, CUPTI detached: CUPTI forgot the buffers it held; they are
// free again (it never writes to them after cuptiFinalize).
void ReclaimLent(CuptiState& s) {
  std::lock_guard<std::mutex> lock(s.mu);
  s.free_buffers.insert(s.free_buffers.end(), s.lent.begin(), s.lent.end());
  s.lent.clear();
}

void Calibrate(CuptiState& s) {
  // (monotonic, cupti, monotonic): the midpoint of the two host reads is when CUPTI's
  // clock was read, to within half the bracket.
  uint64_t best_bracket = UINT64_MAX;
  int64_t best = 0;
  for (int i = 0; i < 5; ++i) {
    uint64_t c = 0;
    const uint64_t a = NowNs();
    if (s.api.timestamp(&c) != CUPTI_SUCCESS) return;
    const uint64_t b = NowNs();
    if (b - a < best_bracket) {
      best_bracket = b - a;
      best = static_cast<int64_t>(c) - static_cast<int64_t>(a + (b - a) / 2);
    }
  }
  // Each estimate is off by up to half its bracket; moving the mapping by that jitter at
  // every calibration would split back-to-back device work into tiny false gaps. Follow
  // the clocks only when they have really drifted apart.
  const int64_t current = s.offset.load(std::memory_order_relaxed);
  if (s.last_calibration_ns == 0 || std::llabs(best - current) > kOffsetHysteresisNs) {
    s.offset.store(best, std::memory_order_relaxed);
  }
  s.last_calibration_ns = NowNs();
}

}  // namespace

CuptiReader& Cupti() {
  static CuptiReader* r = new CuptiReader;
  return *r;
}

void CuptiReader::Start() {
  CuptiState& s = S();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.started) return;
    s.started = true;
  }
  auto give_up = [&](const std::string& why) {
    std::lock_guard<std::mutex> lock(s.mu);
    s.source = Source::kEvents;
    s.detail = why;
  };
  const char* mode = std::getenv("GPUWATCH_CUPTI");
  if (mode && std::strcmp(mode, "off") == 0) return give_up("CUPTI turned off (GPUWATCH_CUPTI=off)");
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.app_active) {
      s.source = Source::kEvents;
      s.detail = "CUPTI is in use by the application's profiler";
      return;
    }
  }
  void* lib = nullptr;
  const char* path = std::getenv("GPUWATCH_CUPTI_LIB");
  for (const char* name : {path, "libcupti.so.13", "libcupti.so.12", "libcupti.so"}) {
    if (name && *name && (lib = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
  }
  if (!lib) return give_up("libcupti not found (set GPUWATCH_CUPTI_LIB)");
  const CuptiApi api = LoadCuptiApi(lib);
  if (!api.subscribe || !api.unsubscribe || !api.register_callbacks || !api.enable || !api.disable || !api.flush_all ||
      !api.next_record || !api.timestamp) {
    return give_up("libcupti lacks the activity API");
  }
  // Another profiler (torch.profiler/Kineto, Nsight) holds the one callback subscriber:
  // step aside rather than fight it for the process-wide activity buffers. gpuwatch itself
  // does not keep the subscription, so a profiler started later can still take it.
  CUpti_SubscriberHandle probe = nullptr;
  const CUptiResult sub = api.subscribe(&probe, [](void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}, nullptr);
  if (sub == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) return give_up("CUPTI is held by another profiler");
  if (sub != CUPTI_SUCCESS) return give_up("CUPTI unusable (cuptiSubscribe error " + std::to_string(sub) + ")");
  api.unsubscribe(probe);
  if (api.register_callbacks(BufferRequested, BufferCompleted) != CUPTI_SUCCESS) {
    return give_up("cuptiActivityRegisterCallbacks failed");
  }
  const ApiRecordSelection api_records = ChooseApiRecords(lib, api);
  if (const CUpti_ActivityKind k = SwitchKinds(api, api_records, true); k != CUPTI_ACTIVITY_KIND_INVALID) {
    return give_up("cuptiActivityEnable failed for kind " + std::to_string(k));
  }
  // Hardware event tracing (Blackwell only; CUPTI_ERROR_NOT_SUPPORTED elsewhere) takes most
  // of CUPTI's cost off each launch: the overhead budget measures the rest.
  const bool hw = api.enable_hw_trace && api.enable_hw_trace(1) == CUPTI_SUCCESS;
  const char* detach = std::getenv("GPUWATCH_CUPTI_DETACH");
  std::lock_guard<std::mutex> lock(s.mu);
  s.detach_off = !api.enable_domain || !api.finalize || (detach && std::strcmp(detach, "0") == 0);
  s.hw_trace = hw;
  s.api = api;
  s.api_records = api_records;
  s.started_ns = NowNs();
  s.recorded_from_ns = s.started_ns;
  Calibrate(s);
  s.source = Source::kCupti;
  s.detail = "CUPTI activity records";
}

void CuptiReader::AppCallbacks(void* request, void* complete) {
  std::lock_guard<std::mutex> lock(S().mu);
  S().app_request = reinterpret_cast<CUpti_BuffersCallbackRequestFunc>(request);
  S().app_complete = reinterpret_cast<CUpti_BuffersCallbackCompleteFunc>(complete);
}

void CuptiReader::HandOver(bool enabling) {
  CuptiState& s = S();
  std::lock_guard<std::mutex> control(s.control);
  Timer().SetCuptiTimes(false);  // our kernel records stop: collectives need their event pairs
  CuptiApi api;
  ApiRecordSelection api_records;
  CUpti_BuffersCallbackRequestFunc app_request;
  CUpti_BuffersCallbackCompleteFunc app_complete;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (!s.started) {
      // Registering alone takes nothing yet (gpuwatch's Start replaces the callbacks and
      // HandOver gives them back); enabling a kind means the profiler is recording now.
      if (enabling) s.app_active = true;
      return;
    }
    if (s.source != Source::kCupti || s.handed_over()) return;
    s.handed_over_ns = NowNs();
    EndLinger(s, s.handed_over_ns);  // what CUPTI costs from here is the profiler's
    api = s.api;
    api_records = s.api_records;
    s.detail = "CUPTI activity records until the application's profiler took CUPTI " +
               std::to_string((NowNs() - s.started_ns) / 1000000) + " ms after start; hooks and events after";
    app_request = s.app_request;
    app_complete = s.app_complete;
  }
  Disarm(s);  // the profiler may want the subscriber
  if (s.detach.load(std::memory_order_acquire) != kDetached) {
    api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);  // our buffers come back to BufferCompleted
    SwitchKinds(api, api_records, false);
  }  // (detached: nothing of ours left in CUPTI, and nothing enabled)
  // Registered before gpuwatch started (and replaced by gpuwatch's, or forgotten by a
  // detach): theirs again.
  if (app_request && app_complete) api.register_callbacks(app_request, app_complete);
  // CUPTI is the application's now (attached by it, if a detach had left it so): its records
  // walked as before.
  s.detach.store(kAttached, std::memory_order_release);
}

void CuptiReader::YieldSubscriber() {
  CuptiState& s = S();
  std::lock_guard<std::mutex> control(s.control);
  if (s.detach.load(std::memory_order_acquire) != kArmed) return;
  Disarm(s);
  std::lock_guard<std::mutex> lock(s.mu);
  s.detach_tried = true;  // not again for this window: the application holds the subscriber now
}

void CuptiReader::SetRecording(bool on) {
  CuptiState& s = S();
  std::lock_guard<std::mutex> control(s.control);
  CuptiApi api;
  bool hw;
  ApiRecordSelection api_records;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.source != Source::kCupti || s.handed_over() || s.recording == on) return;
    api = s.api;
    hw = s.hw_trace;
    api_records = s.api_records;
  }
  if (!on) {
    {
      std::lock_guard<std::mutex> lock(s.mu);
      s.kinds_off_ns = NowNs();  // a call that returned before this was recorded whole
      s.work.Close(s.kinds_off_ns - kCallClockSlackNs);
      s.work_back_ns = 0;
    }
    SwitchKinds(api, api_records, false);
    std::lock_guard<std::mutex> lock(s.mu);
    s.recording = false;
    s.disabled_ns = NowNs();
    s.detach_tried = false;
    s.linger.from[1] = s.linger.from[0];
    s.linger.to[1] = s.linger.to[0];
    s.linger.from[0] = s.disabled_ns;
    s.linger.to[0] = UINT64_MAX;
    return;
  }
  if (!Disarm(s)) return;  // still inside cuptiFinalize: the window opens at a later cycle
  {
    std::lock_guard<std::mutex> lock(s.mu);
    EndLinger(s, NowNs());  // before attaching again: a detached span ended at the detach
  }
  const bool attach = s.detach.load(std::memory_order_acquire) == kDetached;
  if (attach) {  // attach CUPTI again, as Start did
    ReclaimLent(s);
    if (api.register_callbacks(BufferRequested, BufferCompleted) != CUPTI_SUCCESS) {
      std::lock_guard<std::mutex> lock(s.mu);
      s.handed_over_ns = NowNs();  // records nothing more: the budget charges nothing from here
      s.detail = "CUPTI activity records until CUPTI could not be attached again after a window; hooks and events after";
      return;
    }
    if (hw) api.enable_hw_trace(1);
    s.detach.store(kAttached, std::memory_order_release);
  }
  SwitchKinds(api, api_records, true);
  std::lock_guard<std::mutex> lock(s.mu);
  s.recording = true;
  s.disabled_ns = 0;
  s.recorded_from_ns = NowNs();
  s.kinds_off_ns = UINT64_MAX;
  s.last_recorded_enqueue_ns = 0;
  s.work.NextWindow(s.recorded_from_ns + kCallClockSlackNs);
  if (attach) Calibrate(s);  // CUPTI's clock, attached anew
}

CuptiReader::DetachStep CuptiReader::DetachDue(uint64_t now) {
  CuptiState& s = S();
  std::lock_guard<std::mutex> control(s.control);
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.detach.load(std::memory_order_acquire) != kAttached || s.source != Source::kCupti || s.handed_over() ||
      s.recording || s.detach_off || s.detach_tried)
    return DetachStep::kNone;
  if (now - s.disabled_ns < kDetachGraceNs) return DetachStep::kWaiting;
  const auto due = [&] {
    s.detach_tried = true;
    return DetachStep::kDue;
  };
  // The count: API records of the chosen calls only (each enqueues work), both kinds on.
  if (s.count_work && !s.api_records.empty() && s.work.exact() && RecordsApiCalls()) {
    const bool last_call_back = s.last_recorded_enqueue_ns == 0 ||
                                s.work.latest_call_ns() + kCallClockSlackNs >= s.last_recorded_enqueue_ns;
    if (s.flushed_ns >= s.disabled_ns && last_call_back && s.work.outstanding() == 0) {
      // The calls made as the kinds went on or off: their work, if it was recorded, comes
      // back within a cycle or two of the rest (those at the close queued it after the rest).
      if (s.work.late() == 0) return due();
      if (s.work_back_ns == 0) s.work_back_ns = now;
      if (now - s.work_back_ns >= kLateWorkWaitNs) return due();
    }
    if (now - s.disabled_ns < kDetachGraceNs + kMaxDetachWaitNs) return DetachStep::kWaiting;
    s.count_work = false;
    s.detail += "; detaches after windows timed by syncs and the records' lag (a window's work was not all handed back)";
    return due();
  }
  const uint64_t lag = s.work.max_lag_ns();
  const uint64_t wait = std::min(kMaxDetachWaitNs, lag + lag / 4);
  if (s.queue_drained_ns <= s.disabled_ns && now - s.disabled_ns < kDetachGraceNs + wait) return DetachStep::kWaiting;
  return due();
}

void CuptiReader::NoteDrainedCalls(uint64_t queue_drained_ns, uint64_t recorded_enqueue_ns) {
  std::lock_guard<std::mutex> lock(S().mu);
  S().queue_drained_ns = std::max(S().queue_drained_ns, queue_drained_ns);
  S().last_recorded_enqueue_ns = std::max(S().last_recorded_enqueue_ns, recorded_enqueue_ns);
}

CuptiReader::RecordedSpan CuptiReader::recorded_span() const {
  std::lock_guard<std::mutex> lock(S().mu);
  return {S().recorded_from_ns, S().kinds_off_ns};
}

void CuptiReader::ArmDetach() {
  CuptiState& s = S();
  std::lock_guard<std::mutex> control(s.control);
  CuptiApi api;
  {
    std::lock_guard<std::mutex> lock(s.mu);  // a window opened, or a profiler took CUPTI, since
    if (s.detach.load(std::memory_order_acquire) != kAttached || s.handed_over() || s.recording) return;
    api = s.api;
  }
  CUpti_SubscriberHandle sub = nullptr;
  if (api.subscribe(&sub, DetachAtExit, nullptr) != CUPTI_SUCCESS) return;  // the application holds it: stays attached
  s.detach_subscriber = sub;
  s.detach.store(kArmed, std::memory_order_release);
  if (api.enable_domain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API) != CUPTI_SUCCESS ||
      api.enable_domain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API) != CUPTI_SUCCESS) {
    Disarm(s);
    std::lock_guard<std::mutex> lock(s.mu);
    s.detach_off = true;  // this CUPTI cannot call back: it stays attached
  }
}

CuptiReader::LingerSpans CuptiReader::lingering() const {
  CuptiState& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  LingerSpans out = s.linger;  // the latest may have ended at a detach since
  if (out.from[0] != 0 && out.to[0] == UINT64_MAX)
    if (const uint64_t detached = DetachedAfter(s, out.from[0])) out.to[0] = detached;
  return out;
}

CuptiReader::DetachCounts CuptiReader::detach_counts() const {
  std::lock_guard<std::mutex> lock(S().mu);
  return {S().detaches.load(std::memory_order_relaxed), S().detach_ns.load(std::memory_order_relaxed), S().incomplete};
}

bool CuptiReader::RecordsKernels() const {
  const auto& k = Kinds();
  if (std::find(k.begin(), k.end(), CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == k.end()) return false;
  std::lock_guard<std::mutex> lock(S().mu);
  return S().source == Source::kCupti && !S().handed_over() && S().recording;
}

bool CuptiReader::hw_trace() const {
  std::lock_guard<std::mutex> lock(S().mu);
  return S().hw_trace;
}

bool CuptiReader::live() const {
  std::lock_guard<std::mutex> lock(S().mu);
  return S().source == Source::kCupti && !S().handed_over();
}

bool CuptiReader::gone() const {
  std::lock_guard<std::mutex> lock(S().mu);
  return S().source == Source::kEvents || S().handed_over();
}

uint64_t CuptiReader::ended_ns() const {
  std::lock_guard<std::mutex> lock(S().mu);
  return S().handed_over_ns;
}

CuptiReader::Source CuptiReader::source() const {
  std::lock_guard<std::mutex> lock(S().mu);
  return S().source;
}

std::string CuptiReader::source_detail() const {
  std::lock_guard<std::mutex> lock(S().mu);
  return S().detail;
}

void CuptiReader::Poll(bool final, const std::function<void(const ActivityRecord&)>& fn) {
  CuptiState& s = S();
  if (source() != Source::kCupti) return;
  const uint64_t now = NowNs();
  // Once a detach is armed, gpuwatch calls nothing of CUPTI's until a window attaches it again
  // (any call may attach it, the records' walk too): buffers that come back meanwhile wait,
  // but at exit. Handed over: parse what came back, ask CUPTI for nothing.
  const DetachStep step = DetachDue(now);
  const bool detach = step == DetachStep::kDue;
  const bool attached = s.detach.load(std::memory_order_acquire) == kAttached;
  const bool ask = attached && live();
  if (ask && now - s.last_calibration_ns > 1'000'000'000ull) Calibrate(s);
  // Buffers come back when full or flushed; a flush every 100 ms bounds the latency, every
  // cycle while a closed window's work is waited for (its count needs the records). Before a
  // detach, everything CUPTI holds for us (cuptiFinalize drops what it still holds).
  if (ask && (final || step != DetachStep::kNone || now - s.last_flush_ns > 100'000'000ull)) {
    s.last_flush_ns = now;
    s.api.flush_all(final || detach ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);  // calls BufferCompleted: no lock held
  }
  while (attached || final) {
    std::pair<uint8_t*, size_t> buf;
    {
      std::lock_guard<std::mutex> lock(s.mu);
      if (s.completed.empty()) break;
      buf = s.completed.front();
      s.completed.pop_front();
    }
    uint64_t incomplete = 0, api_records = 0, work_records = 0;
    ParseActivityBuffer(
        s.api.next_record, s.offset.load(std::memory_order_relaxed), buf.first, buf.second,
        [&](const ActivityRecord& a) {
          s.work.Observe(a);
          api_records += a.kind == kActApi;
          work_records += a.device_work();
          fn(a);
        },
        incomplete);
    std::lock_guard<std::mutex> lock(s.mu);
    s.incomplete += incomplete;
    s.api_records_seen += api_records;
    s.work_records_seen += work_records;
    s.free_buffers.push_back(buf.first);
  }
  if (step == DetachStep::kWaiting && ask) {
    std::lock_guard<std::mutex> lock(s.mu);
    s.flushed_ns = now;  // flushed after the kinds went off, and parsed
  }
  if (attached) CheckApiRecords(s);
  if (detach) ArmDetach();
}

}  // namespace gpuwatch::inject
