// Compile-time proof that the library's mirrors of gpuwatch.proto (field numbers, enums) match
// the generated code: a proto change that is not mirrored fails the build. Compiled with every
// build of libgpuwatch.so (CMakeLists.txt) but linked into nothing: the library has no libprotobuf.
#include "enrich/cupti_budget.h"
#include "enrich/cupti_reader.h"
#include "gpuwatch.pb.h"
#include "record/record.h"
#include "record/registry.h"
#include "transport/wire_fields.h"

namespace {

namespace f = gpuwatch::inject::field;
namespace gi = gpuwatch::inject;
namespace w = gpuwatch::wire;

// Field `Name` of message `Msg` has the number field::ns::kName says.
#define GW_FIELD(ns, Msg, Name)                                           \
  static_assert(f::ns::k##Name == w::Msg::k##Name##FieldNumber, #Msg "." #Name \
                " in transport/wire_fields.h is not the number gpuwatch.proto gives it")
// A mirrored enum value equals the proto's.
#define GW_ENUM(mine, theirs) \
  static_assert(static_cast<int>(mine) == static_cast<int>(theirs), #mine " is not gpuwatch.proto's " #theirs)

static_assert(f::kProtocolVersion == w::PROTOCOL_VERSION, "Hello.protocol_version is not PROTOCOL_VERSION");
// How a communicator was made travels as the library's own value.
GW_ENUM(gi::kMadeByInitRank, w::Communicator::ORIGIN_INIT_RANK);
GW_ENUM(gi::kMadeBySplit, w::Communicator::ORIGIN_SPLIT);
GW_ENUM(gi::kMadeByInitAll, w::Communicator::ORIGIN_INIT_ALL);
GW_ENUM(gi::kFirstUse, w::Communicator::ORIGIN_FIRST_USE);
GW_FIELD(frame, Frame, Hello);
GW_FIELD(frame, Frame, Batch);
GW_FIELD(frame, Frame, Goodbye);
GW_FIELD(frame, Frame, Heartbeat);

GW_FIELD(hello, Hello, ProtocolVersion);
GW_FIELD(hello, Hello, JobId);
GW_FIELD(hello, Hello, Rank);
GW_FIELD(hello, Hello, LocalRank);
GW_FIELD(hello, Hello, WorldSize);
GW_FIELD(hello, Hello, RankSource);
GW_FIELD(hello, Hello, Host);
GW_FIELD(hello, Hello, Pid);
GW_FIELD(hello, Hello, Device);
GW_FIELD(hello, Hello, OutDir);
GW_FIELD(hello, Hello, LibraryVersion);
GW_FIELD(hello, Hello, StartNs);
GW_FIELD(hello, Hello, StepRange);
GW_FIELD(hello, Hello, Token);

GW_FIELD(event, Event, Api);
GW_FIELD(event, Event, TNs);
GW_FIELD(event, Event, DurNs);
GW_FIELD(event, Event, Bytes);
GW_FIELD(event, Event, CopyKind);
GW_FIELD(event, Event, Flags);
GW_FIELD(event, Event, Stream);
GW_FIELD(event, Event, Tid);
GW_FIELD(event, Event, NameId);
GW_FIELD(event, Event, CommId);
GW_FIELD(event, Event, Seq);
GW_FIELD(event, Event, Peer);
GW_FIELD(event, Event, GpuNs);
GW_FIELD(event, Event, SiteId);
GW_FIELD(event, Event, Address);
GW_FIELD(event, Event, TotalBytes);
GW_FIELD(event, Event, Calls);
GW_FIELD(event, Event, CallsNs);
GW_FIELD(batch, Batch, LaunchTallies);
GW_FIELD(launch_tally, LaunchTally, Api);
GW_FIELD(launch_tally, LaunchTally, NameId);
GW_FIELD(launch_tally, LaunchTally, Launches);
GW_FIELD(launch_tally, LaunchTally, Ns);

GW_FIELD(activity, Activity, Kind);
GW_FIELD(activity, Activity, StartNs);
GW_FIELD(activity, Activity, EndNs);
GW_FIELD(activity, Activity, CorrelationId);
GW_FIELD(activity, Activity, Stream);
GW_FIELD(activity, Activity, Device);
GW_FIELD(activity, Activity, NameId);
GW_FIELD(activity, Activity, Bytes);
GW_FIELD(activity, Activity, CopyKind);
GW_FIELD(activity, Activity, Flags);
GW_FIELD(activity, Activity, ApiId);
GW_FIELD(activity, Activity, ApiDomain);
GW_FIELD(activity, Activity, GraphId);
GW_FIELD(activity, Activity, GraphNodeId);
GW_FIELD(activity, Activity, GridX);
GW_FIELD(activity, Activity, GridY);
GW_FIELD(activity, Activity, GridZ);
GW_FIELD(activity, Activity, BlockX);
GW_FIELD(activity, Activity, BlockY);
GW_FIELD(activity, Activity, BlockZ);
GW_FIELD(activity, Activity, RegistersPerThread);
GW_FIELD(activity, Activity, StaticSharedBytes);
GW_FIELD(activity, Activity, DynamicSharedBytes);

GW_FIELD(kernel_name, KernelName, Id);
GW_FIELD(kernel_name, KernelName, Name);
GW_FIELD(communicator, Communicator, CommId);
GW_FIELD(communicator, Communicator, Nranks);
GW_FIELD(communicator, Communicator, Rank);
GW_FIELD(communicator, Communicator, UniqueHash);
GW_FIELD(communicator, Communicator, Origin);
GW_FIELD(communicator, Communicator, ParentHash);
GW_FIELD(communicator, Communicator, Color);
GW_FIELD(communicator, Communicator, Key);
GW_FIELD(communicator, Communicator, SplitIndex);
GW_FIELD(communicator, Communicator, Ended);
GW_FIELD(drop_count, DropCount, Reason);
GW_FIELD(drop_count, DropCount, Count);
GW_FIELD(call_site, CallSite, Id);
GW_FIELD(call_site, CallSite, Frames);
GW_FIELD(call_site, CallSite, Python);

GW_FIELD(batch, Batch, Events);
GW_FIELD(batch, Batch, KernelNames);
GW_FIELD(batch, Batch, Communicators);
GW_FIELD(batch, Batch, Dropped);
GW_FIELD(batch, Batch, Activities);
GW_FIELD(batch, Batch, GpuSource);
GW_FIELD(batch, Batch, GpuSourceDetail);
GW_FIELD(batch, Batch, Seq);
GW_FIELD(batch, Batch, Environment);
GW_FIELD(batch, Batch, ProcSamples);
GW_FIELD(batch, Batch, CallSites);
GW_FIELD(batch, Batch, SettledNs);
GW_FIELD(batch, Batch, CuptiWindows);
GW_FIELD(batch, Batch, CuptiWindowOpenSinceNs);
GW_FIELD(batch, Batch, CuptiEndedNs);
GW_FIELD(batch, Batch, Overhead);
GW_FIELD(batch, Batch, DeviceSamples);
GW_FIELD(batch, Batch, DeviceSamplerDetail);
GW_FIELD(device_sample, DeviceSample, TNs);
GW_FIELD(device_sample, DeviceSample, GpuUtilPct);
GW_FIELD(device_sample, DeviceSample, MemoryUtilPct);
GW_FIELD(device_sample, DeviceSample, MemoryUsedBytes);
GW_FIELD(device_sample, DeviceSample, MemoryTotalBytes);
GW_FIELD(device_sample, DeviceSample, SmClockMhz);
GW_FIELD(device_sample, DeviceSample, SmClockMaxMhz);
GW_FIELD(device_sample, DeviceSample, MemoryClockMhz);
GW_FIELD(device_sample, DeviceSample, MemoryClockMaxMhz);
GW_FIELD(device_sample, DeviceSample, PowerMw);
GW_FIELD(device_sample, DeviceSample, PowerLimitMw);
GW_FIELD(device_sample, DeviceSample, TemperatureC);
GW_FIELD(device_sample, DeviceSample, ThrottleReasons);
GW_FIELD(device_sample, DeviceSample, PcieGen);
GW_FIELD(device_sample, DeviceSample, PcieGenMax);
GW_FIELD(device_sample, DeviceSample, PcieWidth);
GW_FIELD(device_sample, DeviceSample, PcieWidthMax);
GW_FIELD(device_sample, DeviceSample, PcieTxKbps);
GW_FIELD(device_sample, DeviceSample, PcieRxKbps);
GW_FIELD(device_sample, DeviceSample, Processes);
GW_FIELD(device_sample, DeviceSample, EccUncorrected);
GW_FIELD(device_sample, DeviceSample, MigMode);
GW_FIELD(device_sample, DeviceSample, NvlinkLinksUp);
GW_FIELD(device_sample, DeviceSample, NvlinkVersion);
GW_FIELD(device_sample, DeviceSample, NvlinkLinks);
GW_FIELD(device_sample, DeviceSample, NvlinkTxBytesPerS);
GW_FIELD(device_sample, DeviceSample, NvlinkRxBytesPerS);
GW_FIELD(device_sample, DeviceSample, NvlinkRateLinks);
GW_FIELD(device_process, DeviceProcess, Pid);
GW_FIELD(device_process, DeviceProcess, MemoryBytes);
GW_FIELD(device_process, DeviceProcess, SmUtilPct);
GW_FIELD(batch, Batch, PythonStacks);
GW_FIELD(batch, Batch, HostSamples);
GW_FIELD(batch, Batch, HostSampling);
GW_FIELD(python_stack, PythonStack, Id);
GW_FIELD(python_stack, PythonStack, Frames);
GW_FIELD(python_stack, PythonStack, CallSiteId);
GW_FIELD(python_stack, PythonStack, Native);
GW_FIELD(python_stack, PythonStack, BlockedIn);
GW_FIELD(host_sample, HostSample, TNs);
GW_FIELD(host_sample, HostSample, Tid);
GW_FIELD(host_sample, HostSample, StackId);
GW_FIELD(host_sample, HostSample, InCuda);
GW_FIELD(host_sampling, HostSampling, Hz);
GW_FIELD(host_sampling, HostSampling, Samples);
GW_FIELD(host_sampling, HostSampling, CpuNs);
GW_FIELD(host_sampling, HostSampling, Dropped);
GW_FIELD(host_sampling, HostSampling, NativeSamples);
GW_FIELD(host_sampling, HostSampling, TimerCaptures);
GW_FIELD(host_sampling, HostSampling, NativeSignal);
GW_FIELD(host_sampling, HostSampling, HandlerNs);
GW_FIELD(cupti_window, CuptiWindow, StartNs);
GW_FIELD(cupti_window, CuptiWindow, EndNs);
GW_FIELD(overhead, Overhead, CuptiMode);
GW_FIELD(overhead, Overhead, Budget);
GW_FIELD(overhead, Overhead, HookNs);
GW_FIELD(overhead, Overhead, HookSamples);
GW_FIELD(overhead, Overhead, CuptiNs);
GW_FIELD(overhead, Overhead, CuptiNsMeasured);
GW_FIELD(overhead, Overhead, HookCalls);
GW_FIELD(overhead, Overhead, CuptiCalls);
GW_FIELD(overhead, Overhead, HooksAddedNs);
GW_FIELD(overhead, Overhead, CuptiAddedNs);
GW_FIELD(overhead, Overhead, Windows);
GW_FIELD(overhead, Overhead, WindowNs);
GW_FIELD(overhead, Overhead, ElapsedNs);
GW_FIELD(overhead, Overhead, HwTrace);
GW_FIELD(overhead, Overhead, SenderCpuNs);
GW_FIELD(overhead, Overhead, HookSamples);
GW_FIELD(overhead, Overhead, StartupNs);
GW_FIELD(overhead, Overhead, CuptiGraphNs);
GW_FIELD(overhead, Overhead, CuptiGraphNsMeasured);
GW_FIELD(overhead, Overhead, CuptiGraphLaunches);
GW_FIELD(overhead, Overhead, CuptiDetaches);
GW_FIELD(overhead, Overhead, CuptiDetachNs);
GW_FIELD(overhead, Overhead, CuptiLingerCalls);
GW_FIELD(overhead, Overhead, CuptiLingerNs);
GW_FIELD(overhead, Overhead, CuptiLingerNsMeasured);

GW_FIELD(env_var, EnvVar, Name);
GW_FIELD(env_var, EnvVar, Value);
GW_FIELD(environment, Environment, CudaRuntimeVersion);
GW_FIELD(environment, Environment, CudaDriverVersion);
GW_FIELD(environment, Environment, NcclVersion);
GW_FIELD(environment, Environment, Settings);
GW_FIELD(environment, Environment, DeviceMemoryBytes);
GW_FIELD(environment, Environment, DeviceSmCount);
GW_FIELD(environment, Environment, DeviceName);
GW_FIELD(environment, Environment, DevicePciBusId);
GW_FIELD(environment, Environment, CpuAffinity);
GW_FIELD(environment, Environment, DeviceNumaNodePlus1);
GW_FIELD(environment, Environment, DeviceNumaCpus);
GW_FIELD(environment, Environment, CgroupVersion);
GW_FIELD(environment, Environment, CpuQuotaUs);
GW_FIELD(environment, Environment, CpuPeriodUs);
GW_FIELD(environment, Environment, NicMaxMbps);
GW_FIELD(environment, Environment, NicTotalMbps);
GW_FIELD(environment, Environment, NicPorts);
GW_FIELD(environment, Environment, NicSource);
GW_FIELD(environment, Environment, HostGpus);
GW_FIELD(proc_sample, ProcSample, TNs);
GW_FIELD(proc_sample, ProcSample, CpuNs);
GW_FIELD(proc_sample, ProcSample, ReadChars);
GW_FIELD(proc_sample, ProcSample, ReadBytes);
GW_FIELD(proc_sample, ProcSample, Processes);
GW_FIELD(proc_sample, ProcSample, RunWaitNs);
GW_FIELD(proc_sample, ProcSample, CgroupPeriods);
GW_FIELD(proc_sample, ProcSample, CgroupThrottledPeriods);
GW_FIELD(proc_sample, ProcSample, CgroupThrottledNs);

GW_FIELD(goodbye, Goodbye, Dropped);
GW_FIELD(goodbye, Goodbye, EventsSent);
GW_FIELD(goodbye, Goodbye, EndNs);
GW_FIELD(in_flight, InFlight, Api);
GW_FIELD(in_flight, InFlight, SinceNs);
GW_FIELD(in_flight, InFlight, Tid);
GW_FIELD(in_flight, InFlight, CommId);
GW_FIELD(in_flight, InFlight, Seq);
GW_FIELD(in_flight, InFlight, Stream);
GW_FIELD(comm_progress, CommProgress, CommId);
GW_FIELD(comm_progress, CommProgress, UniqueHash);
GW_FIELD(comm_progress, CommProgress, LastSeq);
GW_FIELD(comm_progress, CommProgress, AnyReturned);
GW_FIELD(heartbeat, Heartbeat, NowNs);
GW_FIELD(heartbeat, Heartbeat, Inside);
GW_FIELD(heartbeat, Heartbeat, Comms);

// record/record.h. The proto's enums only grow: a value added there and not here fails the
// _MAX checks when it is the new largest (the unit test wire_mirror_test counts them all).
GW_ENUM(gi::kApiMemcpy, w::CUDA_MEMCPY);
GW_ENUM(gi::kApiMemcpyAsync, w::CUDA_MEMCPY_ASYNC);
GW_ENUM(gi::kApiStreamSynchronize, w::CUDA_STREAM_SYNCHRONIZE);
GW_ENUM(gi::kApiDeviceSynchronize, w::CUDA_DEVICE_SYNCHRONIZE);
GW_ENUM(gi::kApiEventSynchronize, w::CUDA_EVENT_SYNCHRONIZE);
GW_ENUM(gi::kApiLaunchKernel, w::CUDA_LAUNCH_KERNEL);
GW_ENUM(gi::kApiGraphLaunch, w::CUDA_GRAPH_LAUNCH);
GW_ENUM(gi::kApiStreamBeginCapture, w::CUDA_STREAM_BEGIN_CAPTURE);
GW_ENUM(gi::kApiStreamEndCapture, w::CUDA_STREAM_END_CAPTURE);
GW_ENUM(gi::kApiGraphInstantiate, w::CUDA_GRAPH_INSTANTIATE);
GW_ENUM(gi::kApiMemset, w::CUDA_MEMSET);
GW_ENUM(gi::kApiMemsetAsync, w::CUDA_MEMSET_ASYNC);
GW_ENUM(gi::kApiStreamWaitEvent, w::CUDA_STREAM_WAIT_EVENT);
GW_ENUM(gi::kApiLaunchHostFunc, w::CUDA_LAUNCH_HOST_FUNC);
GW_ENUM(gi::kApiStreamQuery, w::CUDA_STREAM_QUERY);
GW_ENUM(gi::kApiEventQuery, w::CUDA_EVENT_QUERY);
GW_ENUM(gi::kApiDriverLaunchKernel, w::CUDA_DRIVER_LAUNCH_KERNEL);
GW_ENUM(gi::kApiLaunchRun, w::CUDA_LAUNCH_RUN);
GW_ENUM(gi::kApiAllReduce, w::NCCL_ALL_REDUCE);
GW_ENUM(gi::kApiAllGather, w::NCCL_ALL_GATHER);
GW_ENUM(gi::kApiReduceScatter, w::NCCL_REDUCE_SCATTER);
GW_ENUM(gi::kApiBroadcast, w::NCCL_BROADCAST);
GW_ENUM(gi::kApiReduce, w::NCCL_REDUCE);
GW_ENUM(gi::kApiSend, w::NCCL_SEND);
GW_ENUM(gi::kApiRecv, w::NCCL_RECV);
GW_ENUM(gi::kApiNvtxRange, w::NVTX_RANGE);
GW_ENUM(gi::kApiMalloc, w::CUDA_MALLOC);
GW_ENUM(gi::kApiFree, w::CUDA_FREE);
GW_ENUM(gi::kApiMallocAsync, w::CUDA_MALLOC_ASYNC);
GW_ENUM(gi::kApiFreeAsync, w::CUDA_FREE_ASYNC);
GW_ENUM(gi::kApiMallocManaged, w::CUDA_MALLOC_MANAGED);
GW_ENUM(gi::kApiMemGetInfo, w::CUDA_MEM_GET_INFO);
GW_ENUM(gi::kApiEventRecord, w::CUDA_EVENT_RECORD);
GW_ENUM(gi::kApiEventRecord, w::Api_MAX);
static_assert(static_cast<int>(gi::kGroupEnd) > static_cast<int>(w::Api_MAX),
              "kGroupEnd must stay outside the wire's Api values");
GW_ENUM(gi::kCopyH2D, w::COPY_H2D);
GW_ENUM(gi::kCopyD2H, w::COPY_D2H);
GW_ENUM(gi::kCopyD2D, w::COPY_D2D);
GW_ENUM(gi::kCopyH2H, w::COPY_H2H);
GW_ENUM(gi::kCopyH2H, w::CopyKind_MAX);
GW_ENUM(gi::kFlagPageable, w::FLAG_PAGEABLE);
GW_ENUM(gi::kFlagBlockedHost, w::FLAG_BLOCKED_HOST);
GW_ENUM(gi::kFlagInGroup, w::FLAG_IN_GROUP);
GW_ENUM(gi::kFlagNoGpuTime, w::FLAG_NO_GPU_TIME);
GW_ENUM(gi::kFlagInCapture, w::FLAG_IN_CAPTURE);
GW_ENUM(gi::kFlagNotReady, w::FLAG_NOT_READY);
GW_ENUM(gi::kFlagKernelTimed, w::FLAG_KERNEL_TIMED);
GW_ENUM(gi::kFlagFailed, w::FLAG_FAILED);
GW_ENUM(gi::kFlagFailed, w::EventFlag_MAX);

// enrich/cupti_reader.h
GW_ENUM(gi::kActKernel, w::ACTIVITY_KERNEL);
GW_ENUM(gi::kActMemcpy, w::ACTIVITY_MEMCPY);
GW_ENUM(gi::kActMemset, w::ACTIVITY_MEMSET);
GW_ENUM(gi::kActSync, w::ACTIVITY_SYNC);
GW_ENUM(gi::kActApi, w::ACTIVITY_API);
GW_ENUM(gi::kActApi, w::ActivityKind_MAX);
GW_ENUM(gi::CuptiReader::Source::kUnknown, w::GPU_SOURCE_UNSPECIFIED);
GW_ENUM(gi::CuptiReader::Source::kCupti, w::GPU_SOURCE_CUPTI);
GW_ENUM(gi::CuptiReader::Source::kEvents, w::GPU_SOURCE_EVENTS);
GW_ENUM(gi::CuptiReader::Source::kEvents, w::GpuSource_MAX);

// enrich/cupti_budget.h: the wire's CuptiMode is the mode + 1 (0: not said).
GW_ENUM(static_cast<int>(gi::CuptiBudget::Mode::kBudget) + 1, w::CUPTI_MODE_BUDGET);
GW_ENUM(static_cast<int>(gi::CuptiBudget::Mode::kFull) + 1, w::CUPTI_MODE_FULL);
GW_ENUM(static_cast<int>(gi::CuptiBudget::Mode::kOff) + 1, w::CUPTI_MODE_OFF);
GW_ENUM(static_cast<int>(gi::CuptiBudget::Mode::kOff) + 1, w::CuptiMode_MAX);

#undef GW_FIELD
#undef GW_ENUM

}  // namespace
