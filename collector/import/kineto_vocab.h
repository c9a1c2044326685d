// What a torch.profiler (Kineto) event is, in both dialects: the 2021 one (categories
// Runtime, Kernel, Memcpy, Memset, Operator, ...) and today's (cuda_runtime, cuda_driver,
// kernel, gpu_memcpy, gpu_memset, cpu_op, user_annotation, ...). docs/import.md lists the
// mapping; this is its one definition.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "gpuwatch.pb.h"

namespace gpuwatch::collector {

enum class KinetoKind : uint8_t {
  kIgnored,     // flows, metadata, CPU ops, GPU-side annotations, ...
  kRuntime,     // a CUDA runtime call
  kDriver,      // a CUDA driver call
  kKernel,
  kMemcpy,
  kMemset,
  kSync,        // a GPU-side synchronization record (cuda_sync)
  kAnnotation,  // a user annotation (record_function): a range
  kCpuOp,       // an operator: only ProfilerStep#N and the DataLoader's iteration are read
  kPython,      // a python_function frame (with_stack)
  kUnknown,     // a category neither dialect has
};

KinetoKind KindOf(std::string_view ph, std::string_view cat);

// The wire API a runtime or driver call is, API_UNSPECIFIED for calls gpuwatch does not
// model (attribute queries, stream creation, ...). Memory calls are left out: the trace
// has no sizes or addresses for them. Event records and stream waits are mapped; which
// of them can be sent depends on the wait's sync record (rank_import.cpp).
wire::Api ApiOfCall(std::string_view name);

// "Memcpy HtoD (Pageable -> Device)": the direction, and whether the host side is pageable.
wire::CopyKind CopyKindOfName(std::string_view name, bool* pageable);

// ProfilerStep#N: the step ranges torch.profiler's schedule marks.
bool IsProfilerStep(std::string_view name);
inline constexpr const char* kProfilerStepRange = "ProfilerStep";

// enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__: the loop fetching a batch.
bool IsDataLoaderIteration(std::string_view name);
// A host frame as the host sampler writes one ("file:line in function"): python_function's
// "torch/nn/modules/module.py(1501): _call_impl" becomes "torch/nn/modules/module.py:1501 in
// _call_impl"; DataLoader iteration is placed in torch/utils/data/dataloader.py (where
// torch.profiler records it) so that it reads as data loading; other names stay as they are.
std::string HostFrameOf(KinetoKind kind, std::string_view name);

// An NCCL kernel ("ncclKernel_AllReduce_RING_LL_Sum_float", "ncclDevKernel_AllGather_RING_LL").
bool IsNcclKernel(std::string_view name);
// The collective an NCCL kernel or a record_param_comms "Collective name" is;
// API_UNSPECIFIED when not one the wire has (all_to_all, barrier, wait, ...).
wire::Api CollectiveOfKernel(std::string_view kernel_name);
wire::Api CollectiveOfName(std::string_view collective_name);
// Bytes of one element of a PyTorch dtype name ("Float", "BFloat16", "Long"); 0: unknown.
uint32_t DtypeBytes(std::string_view dtype);

}  // namespace gpuwatch::collector
