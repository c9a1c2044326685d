// CUPTI's names of the calls the simulator reports: the ids' own names in cupti_*_cbid.h.
#include <cupti.h>

#include "api_choice.h"

namespace simcupti {
namespace {

struct Named {
  uint32_t cbid;
  const char* name;
};
#define SIM_RT(n) {CUPTI_RUNTIME_TRACE_CBID_##n, #n}
#define SIM_DRV(n) {CUPTI_DRIVER_TRACE_CBID_##n, #n}
constexpr Named kRuntime[] = {
    SIM_RT(cudaLaunchKernel_v7000), SIM_RT(cudaLaunchKernel_ptsz_v7000), SIM_RT(cudaLaunchKernelExC_v11060),
    SIM_RT(cudaLaunchKernelExC_ptsz_v11060), SIM_RT(cudaLaunchCooperativeKernel_v9000),
    SIM_RT(cudaLaunchCooperativeKernel_ptsz_v9000), SIM_RT(cudaGraphLaunch_v10000), SIM_RT(cudaGraphLaunch_ptsz_v10000),
    SIM_RT(cudaMemcpy_v3020), SIM_RT(cudaMemcpy_ptds_v7000), SIM_RT(cudaMemcpyAsync_v3020),
    SIM_RT(cudaMemcpyAsync_ptsz_v7000), SIM_RT(cudaMemcpy2D_v3020), SIM_RT(cudaMemcpy2DAsync_v3020),
    SIM_RT(cudaMemcpy3D_v3020), SIM_RT(cudaMemcpy3DAsync_v3020), SIM_RT(cudaMemcpyPeer_v4000),
    SIM_RT(cudaMemcpyPeerAsync_v4000), SIM_RT(cudaMemcpyToSymbol_v3020), SIM_RT(cudaMemcpyToSymbolAsync_v3020),
    SIM_RT(cudaMemcpyFromSymbol_v3020), SIM_RT(cudaMemcpyFromSymbolAsync_v3020), SIM_RT(cudaMemset_v3020),
    SIM_RT(cudaMemset_ptds_v7000), SIM_RT(cudaMemsetAsync_v3020), SIM_RT(cudaMemsetAsync_ptsz_v7000),
    SIM_RT(cudaMemset2D_v3020), SIM_RT(cudaMemset2DAsync_v3020), SIM_RT(cudaGetLastError_v3020),
};
constexpr Named kDriver[] = {
    SIM_DRV(cuLaunchKernel), SIM_DRV(cuLaunchKernel_ptsz), SIM_DRV(cuLaunchKernelEx), SIM_DRV(cuGraphLaunch),
    SIM_DRV(cuMemcpy), SIM_DRV(cuMemcpyAsync), SIM_DRV(cuMemcpyHtoD_v2), SIM_DRV(cuMemcpyHtoDAsync_v2),
    SIM_DRV(cuMemcpyDtoH_v2), SIM_DRV(cuMemcpyDtoHAsync_v2), SIM_DRV(cuMemcpyDtoD_v2), SIM_DRV(cuMemcpyDtoDAsync_v2),
};
#undef SIM_RT
#undef SIM_DRV

}  // namespace

const char* CallbackName(CUpti_CallbackDomain domain, uint32_t cbid) {
  auto find = [cbid](const auto& table) -> const char* {
    for (const Named& n : table)
      if (n.cbid == cbid) return n.name;
    return nullptr;
  };
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) return find(kRuntime);
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) return find(kDriver);
  return nullptr;
}

}  // namespace simcupti
