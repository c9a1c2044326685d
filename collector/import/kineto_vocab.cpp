// See kineto_vocab.h.
#include "import/kineto_vocab.h"

#include <algorithm>
#include <cctype>
#include <utility>

namespace gpuwatch::collector {
namespace {

bool HasPrefix(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool HasSuffix(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}
bool ContainsNoCase(std::string_view s, std::string_view p) {
  return std::search(s.begin(), s.end(), p.begin(), p.end(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
         }) != s.end();
}

}  // namespace

KinetoKind KindOf(std::string_view ph, std::string_view cat) {
  if (ph != "X") return KinetoKind::kIgnored;  // flows (s/f), metadata (M), instants (i), counters
  static const std::pair<std::string_view, KinetoKind> kCats[] = {
      {"cuda_runtime", KinetoKind::kRuntime}, {"Runtime", KinetoKind::kRuntime},
      {"cuda_driver", KinetoKind::kDriver},   {"kernel", KinetoKind::kKernel},
      {"Kernel", KinetoKind::kKernel},        {"gpu_memcpy", KinetoKind::kMemcpy},
      {"Memcpy", KinetoKind::kMemcpy},        {"gpu_memset", KinetoKind::kMemset},
      {"Memset", KinetoKind::kMemset},        {"cuda_sync", KinetoKind::kSync},
      {"user_annotation", KinetoKind::kAnnotation}, {"cpu_op", KinetoKind::kCpuOp},
      {"Operator", KinetoKind::kCpuOp},       {"gpu_user_annotation", KinetoKind::kIgnored},
      {"python_function", KinetoKind::kPython}, {"Trace", KinetoKind::kIgnored},
      {"async", KinetoKind::kIgnored},        {"cpu_instant_event", KinetoKind::kIgnored},
      {"Python", KinetoKind::kIgnored},       {"overhead", KinetoKind::kIgnored},
      {"Overhead", KinetoKind::kIgnored},     {"ac2g", KinetoKind::kIgnored},
      {"fwdbwd", KinetoKind::kIgnored},       {"gpu_op", KinetoKind::kIgnored},
  };
  for (const auto& [c, k] : kCats)
    if (cat == c) return k;
  return KinetoKind::kUnknown;
}

wire::Api ApiOfCall(std::string_view n) {
  // The per-thread-default-stream forms (_ptsz, _ptds) are the same calls.
  for (std::string_view suffix : {"_ptsz", "_ptds"})
    if (HasSuffix(n, suffix)) n.remove_suffix(suffix.size());
  if (n == "cudaLaunchKernel" || n == "cudaLaunchKernelExC" || n == "cudaLaunchCooperativeKernel" ||
      n == "__cudaLaunchKernel")
    return wire::CUDA_LAUNCH_KERNEL;
  if (n == "cuLaunchKernel" || n == "cuLaunchKernelEx" || n == "cuLaunchCooperativeKernel")
    return wire::CUDA_DRIVER_LAUNCH_KERNEL;
  if (n == "cudaGraphLaunch" || n == "cuGraphLaunch") return wire::CUDA_GRAPH_LAUNCH;
  if (HasPrefix(n, "cudaMemcpy") || HasPrefix(n, "cuMemcpy"))
    return HasSuffix(n, "Async") ? wire::CUDA_MEMCPY_ASYNC : wire::CUDA_MEMCPY;
  if (HasPrefix(n, "cudaMemset") || HasPrefix(n, "cuMemset"))
    return HasSuffix(n, "Async") ? wire::CUDA_MEMSET_ASYNC : wire::CUDA_MEMSET;
  if (n == "cudaStreamSynchronize" || n == "cuStreamSynchronize") return wire::CUDA_STREAM_SYNCHRONIZE;
  if (n == "cudaDeviceSynchronize" || n == "cuCtxSynchronize") return wire::CUDA_DEVICE_SYNCHRONIZE;
  if (n == "cudaEventSynchronize" || n == "cuEventSynchronize") return wire::CUDA_EVENT_SYNCHRONIZE;
  if (n == "cudaStreamQuery" || n == "cuStreamQuery") return wire::CUDA_STREAM_QUERY;
  if (n == "cudaEventQuery" || n == "cuEventQuery") return wire::CUDA_EVENT_QUERY;
  if (n == "cudaEventRecord" || n == "cudaEventRecordWithFlags" || n == "cuEventRecord" || n == "cuEventRecordWithFlags")
    return wire::CUDA_EVENT_RECORD;
  if (n == "cudaStreamWaitEvent" || n == "cuStreamWaitEvent") return wire::CUDA_STREAM_WAIT_EVENT;
  if (n == "cudaLaunchHostFunc" || n == "cuLaunchHostFunc") return wire::CUDA_LAUNCH_HOST_FUNC;
  if (n == "cudaStreamBeginCapture" || n == "cuStreamBeginCapture") return wire::CUDA_STREAM_BEGIN_CAPTURE;
  if (n == "cudaStreamEndCapture" || n == "cuStreamEndCapture") return wire::CUDA_STREAM_END_CAPTURE;
  if (HasPrefix(n, "cudaGraphInstantiate") || HasPrefix(n, "cuGraphInstantiate"))
    return wire::CUDA_GRAPH_INSTANTIATE;
  return wire::API_UNSPECIFIED;
}

wire::CopyKind CopyKindOfName(std::string_view n, bool* pageable) {
  *pageable = ContainsNoCase(n, "pageable");
  if (ContainsNoCase(n, "HtoD")) return wire::COPY_H2D;
  if (ContainsNoCase(n, "DtoH")) return wire::COPY_D2H;
  if (ContainsNoCase(n, "DtoD") || ContainsNoCase(n, "PtoP")) return wire::COPY_D2D;
  if (ContainsNoCase(n, "HtoH")) return wire::COPY_H2H;
  return wire::COPY_UNSPECIFIED;
}

bool IsProfilerStep(std::string_view n) { return HasPrefix(n, "ProfilerStep#"); }

bool IsDataLoaderIteration(std::string_view n) { return HasPrefix(n, "enumerate(DataLoader)"); }

std::string HostFrameOf(KinetoKind kind, std::string_view n) {
  if (kind == KinetoKind::kPython) {
    // "file(line): function"
    const size_t open = n.find('(');
    const size_t close = open == std::string_view::npos ? open : n.find("): ", open);
    if (close != std::string_view::npos && close > open + 1 &&
        n.substr(open + 1, close - open - 1).find_first_not_of("0123456789") == std::string_view::npos)
      return std::string(n.substr(0, open)) + ":" + std::string(n.substr(open + 1, close - open - 1)) + " in " +
             std::string(n.substr(close + 3));
    return std::string(n);
  }
  if (IsDataLoaderIteration(n)) return "torch/utils/data/dataloader.py in " + std::string(n);
  return std::string(n);
}

bool IsNcclKernel(std::string_view n) {
  // The name may start with "void " (demangled) in older traces.
  if (HasPrefix(n, "void ")) n.remove_prefix(5);
  return HasPrefix(n, "ncclKernel_") || HasPrefix(n, "ncclDevKernel_");
}

wire::Api CollectiveOfKernel(std::string_view n) {
  static const std::pair<std::string_view, wire::Api> kOps[] = {
      {"AllReduce", wire::NCCL_ALL_REDUCE},         {"AllGather", wire::NCCL_ALL_GATHER},
      {"ReduceScatter", wire::NCCL_REDUCE_SCATTER}, {"Broadcast", wire::NCCL_BROADCAST},
      {"Reduce", wire::NCCL_REDUCE},                {"SendRecv", wire::API_UNSPECIFIED},
      {"Send", wire::NCCL_SEND},                    {"Recv", wire::NCCL_RECV},
  };
  if (!IsNcclKernel(n)) return wire::API_UNSPECIFIED;
  const size_t us = n.find('_');
  const std::string_view rest = n.substr(us + 1);
  for (const auto& [op, api] : kOps)
    if (HasPrefix(rest, op)) return api;
  return wire::API_UNSPECIFIED;
}

wire::Api CollectiveOfName(std::string_view c) {
  std::string n;
  for (char ch : c)
    if (ch != '_') n += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (n == "allreduce" || n == "allreducecoalesced") return wire::NCCL_ALL_REDUCE;
  if (n == "allgather" || n == "allgatherbase" || n == "allgatherintotensor" || n == "allgatherintotensorcoalesced")
    return wire::NCCL_ALL_GATHER;
  if (n == "reducescatter" || n == "reducescatterbase" || n == "reducescattertensor" ||
      n == "reducescattertensorcoalesced")
    return wire::NCCL_REDUCE_SCATTER;
  if (n == "broadcast") return wire::NCCL_BROADCAST;
  if (n == "reduce") return wire::NCCL_REDUCE;
  if (n == "send") return wire::NCCL_SEND;
  if (n == "recv" || n == "recvanysource") return wire::NCCL_RECV;
  return wire::API_UNSPECIFIED;
}

uint32_t DtypeBytes(std::string_view d) {
  static const std::pair<std::string_view, uint32_t> kSizes[] = {
      {"Float", 4},    {"Double", 8},  {"Half", 2},     {"BFloat16", 2}, {"Long", 8},
      {"Int", 4},      {"Short", 2},   {"Char", 1},     {"Byte", 1},     {"Bool", 1},
      {"Float8_e4m3fn", 1}, {"Float8_e5m2", 1}, {"ComplexFloat", 8}, {"ComplexDouble", 16},
  };
  for (const auto& [n, b] : kSizes)
    if (d == n) return b;
  return 0;
}

}  // namespace gpuwatch::collector
