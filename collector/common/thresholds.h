// Every threshold the interpretation and the diagnosis use, in one place, with where it
// comes from. "field-facts" is /work/shared/notes/field-facts.md;
// "inferred" means chosen here and not yet checked against real jobs: revisit with data.
#pragma once
#include <cstdint>
#include <cstddef>

namespace gpuwatch::collector {

// --- Steps -------------------------------------------------------------------------------
// Default NVTX ranges that mark a training step when GPUWATCH_STEP_RANGE is not set: an
// exact match on one of these (case-insensitive), else any range whose name contains
// "step". (Issue 6; PyTorch Lightning / HF Trainer / the scenario driver use these names.)
inline constexpr const char* kDefaultStepRanges[] = {"train_step", "step", "training_step",
                                                     "optimizer_step", "iteration"};
// Step records kept per rank (13 numbers each, 104 B): the first kMaxSteps steps have a
// per-step breakdown (periodic stalls, per-step categories, the trace's steps track).
// Every step still counts, and its duration goes into the run's median, p90 and total
// (step_stats.h), so memory does not grow with the run.
inline constexpr uint64_t kMaxSteps = 8192;
// Inferring steps without NVTX: the period is looked for in the first kAnchorWindow
// anchors (collectives, else host syncs), up to kMaxPeriod anchors per step; after that
// anchors only count (step_pattern.h). Launches (a loop with neither: forward, backward,
// optimizer.step() on one GPU) repeat hundreds to thousands of times per step, so their
// window and period are larger; the search then tries only the distances at which some
// launch recurs. Inferred.
inline constexpr uint64_t kAnchorWindow = 4096;
inline constexpr uint64_t kMaxPeriod = 64;
inline constexpr uint64_t kLaunchAnchorWindow = 16384;
inline constexpr uint64_t kLaunchMaxPeriod = 4096;
// A period is accepted when this share of the anchors repeats the signature one period
// earlier (each kind of anchor weighing the same, step_pattern.cpp), and no other period
// repeats it by more than kPeriodSlack more. Inferred.
inline constexpr double kPeriodMatch = 0.9;
inline constexpr double kPeriodSlack = 0.01;
// The window is searched each time it doubles from kFirstSearch anchors (launches: from
// kFirstLaunchSearch, as a few launches in a row often look alike), and a period is taken
// once it repeated kMinRepeats times, so steps are known (and charged device time) while
// the run goes on, a few steps in. Inferred.
inline constexpr uint64_t kFirstSearch = 16;
inline constexpr uint64_t kFirstLaunchSearch = 64;
inline constexpr uint64_t kMinRepeats = 4;
// A launch after the host paused this long starts a new phrase of the loop (the next
// batch): part of its signature, so that a step of identical kernels still has a period.
inline constexpr uint64_t kLaunchPauseNs = 1'000'000;

// Host events are processed in time order once the library says nothing earlier is to
// come (Batch.settled_ns), or else after waiting this long behind the newest one (the
// library holds a collective back until its CUDA events complete), at most kMaxHeld.
inline constexpr uint64_t kHostHorizonNs = 500'000'000;
inline constexpr uint64_t kMaxHeld = 1 << 18;

// --- Device timeline ---------------------------------------------------------------------
// Reorder window behind the newest device record (the library lags ~1 s) and its cap; API
// spans kept behind the sweep for the correlation join; host-blocked intervals kept for
// the gap classification (interpret/device_sweep.h).
inline constexpr uint64_t kHorizonNs = 2'000'000'000;
inline constexpr uint64_t kMaxPending = 1 << 18;
inline constexpr uint64_t kApiKeepNs = 4'000'000'000;
inline constexpr uint64_t kMaxApis = 1 << 18;
inline constexpr uint64_t kMaxSyncs = 1 << 16;
// An idle gap that the launching call started after, and that is at least this long, is
// host work (data loading, Python) rather than launch overhead. HTA calls gaps under
// 30 us "kernel_wait" (field-facts); eager PyTorch spends tens of µs of Python dispatch per
// op, so 100 µs separates per-op launch overhead from per-step host work. Inferred.
inline constexpr uint64_t kLaunchGapNs = 100'000;
// Host-blocking copies of at most this many bytes are `.item()`/`.cpu()`-style syncs, not
// bulk transfers: Nsight Systems' sync-memcpy rule ignores H2D copies of 64 KB or less
// (field-facts); the same bound is used for D2H here.
inline constexpr uint64_t kSmallCopyBytes = 64 * 1024;
// Queries of one polling loop follow each other within this (interpret/poll_folder.h): a
// loop that sleeps a little between queries still waits on the GPU, even when a loaded
// machine wakes it late (a 50 us sleep came back after 2+ ms beside a build); a query per
// training step does not (the step's other calls end the loop anyway), nor a watchdog
// thread that looks once a second.
inline constexpr uint64_t kPollGapNs = 10'000'000;

// --- Step time ---------------------------------------------------------------------------
// summary.txt names the part of a step its parts leave out beyond this share of the step.
inline constexpr double kUnattributedShare = 0.02;
// A step's host and device periods differ when one is this many times the other
// (analyze/rank_result.cpp, PacedBy): the longer one then sets the pace.
inline constexpr double kPaceTolerance = 1.05;

// --- Periodic stalls ---------------------------------------------------------------------
// A step is a stall when it lasts more than this times the median step and most of its
// excess is GPU idle time. Practitioners' "periodic drops in utilization" (issue 6);
// factor inferred.
inline constexpr double kStallFactor = 2.0;
inline constexpr double kStallIdleShare = 0.5;
// At least this many stalls on one period, filling this share of its steps between its
// first and last stall, make a periodic stall (analyze/stall_period.h): one checkpoint in
// four may run short or fall outside the recorded steps.
inline constexpr uint64_t kMinStalls = 2;
inline constexpr double kStallPeriodFill = 0.75;

// --- Bandwidth -----------------------------------------------------------------------------
// An algbw above this times the device's link peak is said to be impossible as measured
// (report/comms_json.cpp): NVML's link rates are exact, so a little margin for rounding.
inline constexpr double kAboveLinkPeak = 1.05;

// --- Straggler ---------------------------------------------------------------------------
// A rank is the straggler when it reaches a collective last in at least this share of the
// collectives all ranks made (HTA's straggler analysis looks at which ranks start the
// most-varying communication kernel last; field-facts) ...
inline constexpr double kStragglerLastShare = 0.5;
// ... and the others' mean wait for it is at least this share of the median step (or of
// the median gap between collectives without steps). NVIDIA's straggler detector flags a
// rank at a relative score below ~0.7 (field-facts); a tenth is a gentler, inferred bound.
// It was 5%: on a loaded 2-core machine host scheduling alone made a healthy TP pair's rank
// last in 73% of its calls, its peer waiting 0.41 ms a call, over 5% of the step (the
// tp_straggler scenario, tests/e2e/comms_test.cpp).
inline constexpr double kStragglerMinWaitShare = 0.10;
// Collective calls kept per rank for matching across ranks: the first ones (32 B each).
inline constexpr uint64_t kMaxCollCalls = 1 << 13;
// Communicators kept per rank with their own figures (a few hundred bytes each); Megatron
// makes fewer than ten per rank, so more is a leak of communicators, still counted.
inline constexpr uint64_t kMaxCommsPerRank = 256;
// Collective calls remembered to name the communicator of the NCCL kernels they launched.
inline constexpr uint64_t kMaxCommCallsHeld = 4096;

// --- Parallel strategies -----------------------------------------------------------------
// A collective below this size (S, nccl-tests' bytes) is latency-bound: a ring's time is
// about alpha + S x factor / busbw, and it reaches half its bus bandwidth at S = alpha x busbw,
// about 20 us x 50 GB/s = 1 MB on NVLink or InfiniBand (nccl-tests' curves flatten from a
// few MB). A documented constant, not measured per rank: a rank whose collectives are all
// small has no large call to measure its link's bandwidth with. Inferred.
inline constexpr uint64_t kSmallCollectiveBytes = 1 << 20;
// small_collectives needs at least this many small collectives per step (or in all,
// without steps, this many per second of the run): a few small calls are normal.
inline constexpr double kSmallCollectivesPerStep = 8;
// link_bandwidth (link_peaks.h): a large collective is expected to take a latency plus its
// bus bytes over the link's peak. The calls are "far below" the link when they took longer
// than that over kLinkFarBelowShare; their time lost is what they took beyond the latency
// plus their bus bytes at kLinkExpectedShare of the peak. nccl-tests reach 80-100% of NVLink
// and of an InfiniBand NIC with large all-reduces, less over PCIe; inferred.
inline constexpr double kLinkFarBelowShare = 0.35;
inline constexpr double kLinkExpectedShare = 0.7;
// The latency a large collective pays whatever its size: the rank's shortest small call, at
// least kCollLatencyFloorNs (nccl-tests' small all-reduces on an 8-GPU NVLink node: 10-30 us),
// so that 1-4 MB calls, still partly latency-bound, are not judged by bandwidth alone. Inferred.
inline constexpr uint64_t kCollLatencyFloorNs = 20'000;
// pipeline_bubble: the stage after the slow one waits at least this share of the base time
// on its recvs beyond what the slow stage itself waited (the recvs' own transfer counts in
// the bubble: a balanced pipeline shows a few percent). As the straggler's 5%; inferred.
inline constexpr double kPipelineBubbleMinShare = 0.05;
// Send/recv calls whose GPU times are kept per link for matching across ranks (8 B each),
// and links kept per rank.
inline constexpr uint64_t kMaxP2pCallsKept = 1 << 13;
inline constexpr uint64_t kMaxP2pLinks = 64;
// ncclRecv host calls kept for telling recv kernels apart, and how long behind the sweep.
inline constexpr uint64_t kMaxRecvCallsKept = 1 << 14;
inline constexpr uint64_t kRecvCallKeepNs = 10'000'000'000;

// --- Findings ----------------------------------------------------------------------------
// Severity from the share of the rank's stepped time (or active time) a finding costs.
// High at 20%: the Nsight Systems utilization rule fires under 50% GPU utilization
// (field-facts), i.e. half the time lost; a fifth is already worth acting on first.
// Medium at 5%, and below 1% a finding is not reported. Inferred.
inline constexpr double kHighShare = 0.20;
inline constexpr double kMediumShare = 0.05;
inline constexpr double kReportShare = 0.01;
// launch_bound needs most kernels to be shorter than their launch call (HTA's "short
// kernel", field-facts) ...
inline constexpr double kShortKernelShare = 0.5;

// --- environment -------------------------------------------------------------------------
// Versions older than these are reported (severity low, no time lost). NCCL 2.18 (2023) is
// what PyTorch 2.1 shipped; releases since brought NVLS/NVLink SHARP, PXN and profiler
// plugins (field-facts: plugins from 2.23). CUDA 12.0 is the first runtime for Hopper's
// full feature set; CUDA 11 builds predate it. Both bounds are inferred, to revisit.
inline constexpr int kOldNcclVersion = 21800;  // ncclGetVersion encoding: 2.18.0
inline constexpr int kOldCudaRuntime = 12000;  // cudaRuntimeGetVersion encoding: 12.0
// NCCL_MAX_NCHANNELS at or below this limits bandwidth (NCCL uses one SM and one ring or
// tree per channel; modern GPUs run 16-32 channels). Inferred.
inline constexpr int kFewNcclChannels = 2;

// --- input_io ----------------------------------------------------------------------------
// The host side of data loading is CPU-bound when the process tree kept at least this many
// cores busy during the GPU's host-wait gaps -- at least one process, the main one or a
// DataLoader worker, was mostly running -- or, reading little, busy plus runnable-waiting
// for a core (an oversubscribed machine). A Python process blocked on a queue or a read
// uses ~0. Inferred.
inline constexpr double kInputCpuBoundCores = 0.7;
// Below that, it waits on reads when the tree read at least this many MB/s (rchar: files,
// pipes, sockets) during the gaps. Inferred: any sustained reading while the CPUs idle.
inline constexpr double kInputReadMinMBps = 1.0;
// input_io is reported only when samples cover at least this share of the host-wait gaps
// (samples start at the first CUDA call and come every ~100 ms). Inferred.
inline constexpr double kInputMinCoverage = 0.5;
// Host frames (issue 16): the host sampler's samples of the training thread during the GPU's
// host-wait gaps (analyze/host_frames.h). Below this many (10 ms of waiting at the default
// 100 Hz is one) they name nothing and the loss stays `data_loading`; with them, it is
// `data_loading` only when at least half show DataLoader iteration, else `host_overhead`.
inline constexpr uint64_t kHostFramesMinSamples = 5;

// --- small_batch (issue 17) ----------------------------------------------------------------
// The batch could grow when the rank's allocations left at least this share of the device's
// memory unused at their peak (PyTorch's caching allocator reserves what the batch needs, so
// its peak is the batch's footprint; doubling the batch about doubles the activations).
// Inferred: room to double at least the part of memory that is not weights.
inline constexpr double kSmallBatchHeadroom = 0.5;

// --- cpu_affinity, cpu_throttled (issue 17) ----------------------------------------------------
// A rank is placed away from its GPU when at least this share of the CPUs it may run on sit
// on another NUMA node than the GPU: most of its host threads then reach the GPU (pinned
// buffers, the driver's doorbells) and their own memory across the inter-socket link.
inline constexpr double kOffNodeShare = 0.5;
// What such a placement costs the host work the GPU waited for: cross-socket memory has
// about 1.5-2x the latency and a fraction of the bandwidth of local memory; host work is
// partly memory-bound. Inferred: a quarter of the GPU's host-wait time, scaled by the share
// of the rank's CPUs off the node. An estimate to rank the finding, not a measurement.
inline constexpr double kCrossNumaSlowdown = 0.25;

// --- cpu_oversubscribed ---------------------------------------------------------------------
// A host's CPUs explain the spread between its ranks (the straggler's peers' wait) when the
// ranks' threads waited for a CPU (run queue, cgroup throttling) at least this share of that
// wait per step (median rank of the host): a rank delayed by the scheduler reaches the
// collective late by about its own wait, and which rank waits longest changes from step to
// step. Half: inferred, the waits are summed over a rank's threads and not all of them gate a step.
inline constexpr double kOversubscribedExplains = 0.5;
// ... and at least this share of the wall time (median rank), so that a host with cores to
// spare, whose threads wait a scheduler tick now and then, is never named. Inferred.
inline constexpr double kOversubscribedMinWaitShare = 0.02;

// --- Another process on the GPU (gpu_shared; its what-if) ----------------------------------
// The others' busy share b past which 1/(1-b), the stretch of this rank's kernels, says
// little (and explodes): the finding's loss and the what-if's unshared kernels stop there.
inline constexpr double kMaxOthersBusy = 0.9;

// --- The console's short form (report/standout_ranks.h) -------------------------------------
// A rank stands out when its median step is this factor slower or faster than the median
// rank's, or its GPU busy share this many points away from the median rank's. The ranks of
// a synchronous job share one pace (they wait for each other in collectives), so a step 20%
// off means the rank runs at a pace of its own; a straggler's busy share differs from its
// peers' by the waits it causes (theirs busy in NCCL kernels, its own idle for its host).
// Inferred: well above what host scheduling alone spreads the ranks of a healthy job on a
// loaded 2-core machine (a few points, a few percent).
inline constexpr double kStandOutStepRatio = 1.2;
inline constexpr double kStandOutBusyPoints = 0.15;
// The short form's length whatever the rank count (the files line included): the ranks that
// stand out get the lines left after the verdict, the findings and the job line, at least
// kConsoleMinRanks of them.
inline constexpr size_t kConsoleLines = 30;
inline constexpr size_t kConsoleMinRanks = 3;
inline constexpr size_t kConsoleFindings = 3;

}  // namespace gpuwatch::collector
