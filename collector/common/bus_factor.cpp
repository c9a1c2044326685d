// See bus_factor.h.
#include "common/bus_factor.h"

namespace gpuwatch::collector {

double BusFactor(wire::Api api, int n) {
  if (n < 1) n = 1;  // unknown size: no peers to move data to
  switch (api) {
    case wire::NCCL_ALL_REDUCE: return 2.0 * (n - 1) / n;
    case wire::NCCL_ALL_GATHER:
    case wire::NCCL_REDUCE_SCATTER: return static_cast<double>(n - 1) / n;
    default: return 1.0;
  }
}

}  // namespace gpuwatch::collector
