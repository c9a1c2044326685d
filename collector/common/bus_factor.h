// nccl-tests' bus-bandwidth factor (field-facts.md, "Collectives").
#pragma once
#include "gpuwatch.pb.h"

namespace gpuwatch::collector {

// AllReduce 2(n-1)/n; AllGather, ReduceScatter (n-1)/n; Broadcast, Reduce, Send, Recv 1.
double BusFactor(wire::Api api, int n);

}  // namespace gpuwatch::collector
