// CUPTI's record kinds and API records as gpuwatch wants them, switched on and off.
#include "enrich/cupti_kinds.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

namespace gpuwatch::inject {
namespace {

template <typename F>
F Sym(void* lib, const char* name) {
  return reinterpret_cast<F>(dlsym(lib, name));
}

// The API records of `ids`' calls on or off, one call at a time; false if CUPTI refused one.
bool SwitchCalls(const CuptiApi& api, CUpti_ActivityKind kind, const std::vector<uint32_t>& ids, bool on) {
  const auto one = kind == CUPTI_ACTIVITY_KIND_RUNTIME ? api.enable_runtime_api : api.enable_driver_api;
  bool ok = true;
  for (uint32_t cbid : ids) ok = one(cbid, on ? 1 : 0) == CUPTI_SUCCESS && ok;
  return ok;
}

}  // namespace

CuptiApi LoadCuptiApi(void* lib) {
  return CuptiApi{Sym<decltype(CuptiApi::subscribe)>(lib, "cuptiSubscribe"),
                  Sym<decltype(CuptiApi::unsubscribe)>(lib, "cuptiUnsubscribe"),
                  Sym<decltype(CuptiApi::register_callbacks)>(lib, "cuptiActivityRegisterCallbacks"),
                  Sym<decltype(CuptiApi::enable)>(lib, "cuptiActivityEnable"),
                  Sym<decltype(CuptiApi::disable)>(lib, "cuptiActivityDisable"),
                  Sym<decltype(CuptiApi::flush_all)>(lib, "cuptiActivityFlushAll"),
                  Sym<decltype(CuptiApi::next_record)>(lib, "cuptiActivityGetNextRecord"),
                  Sym<decltype(CuptiApi::timestamp)>(lib, "cuptiGetTimestamp"),
                  Sym<decltype(CuptiApi::enable_hw_trace)>(lib, "cuptiActivityEnableHWTrace"),
                  Sym<decltype(CuptiApi::enable_domain)>(lib, "cuptiEnableDomain"),
                  Sym<decltype(CuptiApi::finalize)>(lib, "cuptiFinalize"),
                  Sym<decltype(CuptiApi::enable_runtime_api)>(lib, "cuptiActivityEnableRuntimeApi"),
                  Sym<decltype(CuptiApi::enable_driver_api)>(lib, "cuptiActivityEnableDriverApi")};
}

std::vector<CUpti_ActivityKind> Kinds() {
  static const std::vector<CUpti_ActivityKind> kinds = [] {
    const std::pair<const char*, CUpti_ActivityKind> all[] = {
        {"kernel", CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL}, {"memcpy", CUPTI_ACTIVITY_KIND_MEMCPY},
        {"memset", CUPTI_ACTIVITY_KIND_MEMSET},            {"sync", CUPTI_ACTIVITY_KIND_SYNCHRONIZATION},
        {"runtime", CUPTI_ACTIVITY_KIND_RUNTIME},          {"driver", CUPTI_ACTIVITY_KIND_DRIVER}};
    const char* want = std::getenv("GPUWATCH_CUPTI_KINDS");
    std::vector<CUpti_ActivityKind> out;
    for (auto& [name, kind] : all) {
      if (!want || !*want) {
        out.push_back(kind);
        continue;
      }
      const std::string list = std::string(",") + want + ",";
      if (list.find(std::string(",") + name + ",") != std::string::npos) out.push_back(kind);
    }
    return out;
  }();
  return kinds;
}

CUpti_ActivityKind SwitchKinds(const CuptiApi& api, const ApiRecordSelection& only, bool on) {
  CUpti_ActivityKind refused = CUPTI_ACTIVITY_KIND_INVALID;
  for (CUpti_ActivityKind k : Kinds()) {
    const std::vector<uint32_t>* ids = k == CUPTI_ACTIVITY_KIND_RUNTIME  ? &only.runtime
                                       : k == CUPTI_ACTIVITY_KIND_DRIVER ? &only.driver
                                                                         : nullptr;
    const bool ok = ids && !ids->empty() ? SwitchCalls(api, k, *ids, on)
                                         : (on ? api.enable(k) : api.disable(k)) == CUPTI_SUCCESS;
    if (!ok && refused == CUPTI_ACTIVITY_KIND_INVALID) refused = k;
  }
  return refused;
}

ApiRecordSelection ChooseApiRecords(void* lib, const CuptiApi& api) {
  const char* want = std::getenv("GPUWATCH_CUPTI_API_RECORDS");
  if ((want && std::strcmp(want, "all") == 0) || !api.enable_runtime_api || !api.enable_driver_api) return {};
  ApiRecordSelection only = SelectEnqueueingCalls(reinterpret_cast<CallbackNameFn>(dlsym(lib, "cuptiGetCallbackName")));
  const auto& kinds = Kinds();
  using Domain = std::pair<CUpti_ActivityKind, std::vector<uint32_t>*>;
  for (auto [kind, ids] : {Domain{CUPTI_ACTIVITY_KIND_RUNTIME, &only.runtime}, Domain{CUPTI_ACTIVITY_KIND_DRIVER, &only.driver}}) {
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) ids->clear();  // not wanted (GPUWATCH_CUPTI_KINDS)
    const bool ok = SwitchCalls(api, kind, *ids, true);
    SwitchCalls(api, kind, *ids, false);  // Start turns them on with the other kinds
    if (!ok) ids->clear();
  }
  return only;
}

void SwitchToWholeApiKinds(const CuptiApi& api, const ApiRecordSelection& chosen) {
  for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER}) {
    SwitchCalls(api, k, k == CUPTI_ACTIVITY_KIND_RUNTIME ? chosen.runtime : chosen.driver, false);
    api.enable(k);
  }
}

}  // namespace gpuwatch::inject
