// Runtime and driver calls that enqueue device work, told apart by CUPTI's names for them.
#include "enrich/cupti_api_records.h"

#include <cstring>

namespace gpuwatch::inject {
namespace {

bool StartsWith(const char* s, const char* prefix) { return std::strncmp(s, prefix, std::strlen(prefix)) == 0; }

}  // namespace

bool EnqueuesDeviceWork(CUpti_CallbackDomain domain, const char* name) {
  if (!name) return false;
  // cudaLaunchKernel, cudaLaunchKernelExC, cudaLaunchCooperativeKernel...; every copy and
  // memset shape (2D, 3D, peer, symbol, async, per-thread stream); graph launches, whose
  // nodes' records carry the launch's correlation id.
  static const char* const kRuntime[] = {"cudaLaunch", "cudaMemcpy", "cudaMemset", "cudaGraphLaunch"};
  static const char* const kDriver[] = {"cuLaunch", "cuMemcpy", "cuMemset", "cuGraphLaunch"};
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    if (StartsWith(name, "cudaLaunchHostFunc")) return false;  // runs on the host: no device record
    for (const char* p : kRuntime)
      if (StartsWith(name, p)) return true;
  } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    if (StartsWith(name, "cuLaunchHostFunc")) return false;
    for (const char* p : kDriver)
      if (StartsWith(name, p)) return true;
  }
  return false;
}

ApiRecordSelection SelectEnqueueingCalls(CallbackNameFn callback_name, uint32_t runtime_ids, uint32_t driver_ids) {
  ApiRecordSelection out;
  if (!callback_name) return out;
  auto select = [&](CUpti_CallbackDomain domain, uint32_t ids, std::vector<uint32_t>& into) {
    for (uint32_t cbid = 1; cbid < ids; ++cbid) {
      const char* name = nullptr;
      if (callback_name(domain, cbid, &name) == CUPTI_SUCCESS && EnqueuesDeviceWork(domain, name)) into.push_back(cbid);
    }
  };
  select(CUPTI_CB_DOMAIN_RUNTIME_API, runtime_ids, out.runtime);
  select(CUPTI_CB_DOMAIN_DRIVER_API, driver_ids, out.driver);
  return out;
}

}  // namespace gpuwatch::inject
