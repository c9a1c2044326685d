// gpuwatch.proto's field numbers, for the hand encoders (transport/encode.cpp). Every one is
// checked against the generated code at compile time (transport/wire_check.cpp).
#pragma once
#include <cstdint>

namespace gpuwatch::inject::field {

inline constexpr uint32_t kProtocolVersion = 1;  // the value of Hello.protocol_version

namespace frame {
inline constexpr uint32_t kHello = 1, kBatch = 2, kGoodbye = 3, kHeartbeat = 4;
}

namespace hello {
inline constexpr uint32_t kProtocolVersion = 1, kJobId = 2, kRank = 3, kLocalRank = 4, kWorldSize = 5,
                          kRankSource = 6, kHost = 7, kPid = 8, kDevice = 9, kOutDir = 10,
                          kLibraryVersion = 11, kStartNs = 12, kStepRange = 13, kToken = 14;
}

namespace event {
inline constexpr uint32_t kApi = 1, kTNs = 2, kDurNs = 3, kBytes = 4, kCopyKind = 5, kFlags = 6, kStream = 7,
                          kTid = 8, kNameId = 9, kCommId = 10, kSeq = 11, kPeer = 12, kGpuNs = 13, kSiteId = 14,
                          kAddress = 25, kTotalBytes = 26, kCalls = 27, kCallsNs = 28;
}

namespace activity {
inline constexpr uint32_t kKind = 1, kStartNs = 2, kEndNs = 3, kCorrelationId = 4, kStream = 5, kDevice = 6,
                          kNameId = 7, kBytes = 8, kCopyKind = 9, kFlags = 10, kApiId = 11, kApiDomain = 12,
                          kGraphId = 13, kGraphNodeId = 14, kGridX = 20, kGridY = 21, kGridZ = 22,
                          kBlockX = 23, kBlockY = 24, kBlockZ = 25, kRegistersPerThread = 26,
                          kStaticSharedBytes = 27, kDynamicSharedBytes = 28;
}

namespace kernel_name {
inline constexpr uint32_t kId = 1, kName = 2;
}

namespace communicator {
inline constexpr uint32_t kCommId = 1, kNranks = 2, kRank = 3, kUniqueHash = 4, kOrigin = 5, kParentHash = 6,
                          kColor = 7, kKey = 8, kSplitIndex = 9, kEnded = 10;
}

namespace drop_count {
inline constexpr uint32_t kReason = 1, kCount = 2;
}

namespace call_site {
inline constexpr uint32_t kId = 1, kFrames = 2, kPython = 3;
}

namespace batch {
inline constexpr uint32_t kEvents = 1, kKernelNames = 2, kCommunicators = 3, kDropped = 4, kActivities = 5,
                          kGpuSource = 6, kGpuSourceDetail = 7, kSeq = 8, kEnvironment = 9, kProcSamples = 10,
                          kCallSites = 11, kSettledNs = 12, kCuptiWindows = 13, kCuptiWindowOpenSinceNs = 14,
                          kOverhead = 15, kPythonStacks = 20, kHostSamples = 21, kHostSampling = 22;
inline constexpr uint32_t kDeviceSamples = 25, kDeviceSamplerDetail = 26, kCuptiEndedNs = 27, kLaunchTallies = 28;
}
namespace launch_tally {
inline constexpr uint32_t kApi = 1, kNameId = 2, kLaunches = 3, kNs = 4;
}
namespace python_stack {
inline constexpr uint32_t kId = 1, kFrames = 2, kCallSiteId = 3, kNative = 4, kBlockedIn = 5;
}
namespace host_sample {
inline constexpr uint32_t kTNs = 1, kTid = 2, kStackId = 3, kInCuda = 4;
}
namespace host_sampling {
inline constexpr uint32_t kHz = 1, kSamples = 2, kCpuNs = 3, kDropped = 4, kNativeSamples = 5, kTimerCaptures = 6,
                          kNativeSignal = 7, kHandlerNs = 8, kHeldSamples = 9;
}

namespace device_sample {
inline constexpr uint32_t kTNs = 1, kGpuUtilPct = 2, kMemoryUtilPct = 3, kMemoryUsedBytes = 4, kMemoryTotalBytes = 5,
                          kSmClockMhz = 6, kSmClockMaxMhz = 7, kMemoryClockMhz = 8, kMemoryClockMaxMhz = 9,
                          kPowerMw = 10, kPowerLimitMw = 11, kTemperatureC = 12, kThrottleReasons = 13,
                          kPcieGen = 14, kPcieGenMax = 15, kPcieWidth = 16, kPcieWidthMax = 17, kPcieTxKbps = 18,
                          kPcieRxKbps = 19, kProcesses = 20, kEccUncorrected = 21, kMigMode = 22,
                          kNvlinkLinksUp = 23, kNvlinkVersion = 24, kNvlinkLinks = 25, kNvlinkTxBytesPerS = 26,
                          kNvlinkRxBytesPerS = 27, kNvlinkRateLinks = 28;
}

namespace device_process {
inline constexpr uint32_t kPid = 1, kMemoryBytes = 2, kSmUtilPct = 3;
}

namespace cupti_window {
inline constexpr uint32_t kStartNs = 1, kEndNs = 2;
}

namespace overhead {
inline constexpr uint32_t kCuptiMode = 1, kBudget = 2, kHookNs = 3, kCuptiNs = 4, kCuptiNsMeasured = 5,
                          kHookCalls = 6, kCuptiCalls = 7, kHooksAddedNs = 8, kCuptiAddedNs = 9, kWindows = 10,
                          kWindowNs = 11, kElapsedNs = 12, kHwTrace = 13, kSenderCpuNs = 14,
                          kHookSamples = 15, kStartupNs = 16, kCuptiGraphNs = 19, kCuptiGraphNsMeasured = 20,
                          kCuptiGraphLaunches = 21, kCuptiDetaches = 22, kCuptiDetachNs = 23,
                          kCuptiLingerCalls = 24, kCuptiLingerNs = 25, kCuptiLingerNsMeasured = 26;
}

namespace env_var {
inline constexpr uint32_t kName = 1, kValue = 2;
}

namespace environment {
inline constexpr uint32_t kCudaRuntimeVersion = 1, kCudaDriverVersion = 2, kNcclVersion = 3, kSettings = 4,
                          kDeviceMemoryBytes = 5, kDeviceSmCount = 6, kDeviceName = 7,
                          kDevicePciBusId = 8, kDeviceComputeCapability = 9, kCpuAffinity = 20, kDeviceNumaNodePlus1 = 21,
                          kDeviceNumaCpus = 22, kCgroupVersion = 23, kCpuQuotaUs = 24, kCpuPeriodUs = 25,
                          kNicMaxMbps = 26, kNicTotalMbps = 27, kNicPorts = 28, kNicSource = 29, kHostGpus = 30;
}

namespace proc_sample {
inline constexpr uint32_t kTNs = 1, kCpuNs = 2, kReadChars = 3, kReadBytes = 4, kProcesses = 5, kRunWaitNs = 6,
                          kCgroupPeriods = 10, kCgroupThrottledPeriods = 11, kCgroupThrottledNs = 12;
}

namespace goodbye {
inline constexpr uint32_t kDropped = 1, kEventsSent = 2, kEndNs = 3;
}

namespace in_flight {
inline constexpr uint32_t kApi = 1, kSinceNs = 2, kTid = 3, kCommId = 4, kSeq = 5, kStream = 6;
}

namespace comm_progress {
inline constexpr uint32_t kCommId = 1, kUniqueHash = 2, kLastSeq = 3, kAnyReturned = 4;
}

namespace heartbeat {
inline constexpr uint32_t kNowNs = 1, kInside = 2, kComms = 3;
}

}  // namespace gpuwatch::inject::field
