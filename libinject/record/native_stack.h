// Native frames of a thread without Python (issue 16, a C++ job): return addresses only,
// read fault-safely; naming them (dladdr) is the sender's (enrich/native_frame_names.h).
//
// Two ways in, neither stops the thread:
// - running: the registers a CPU-time timer's signal handler sees (record/native_signal.h),
//   walked along the frame-pointer chain;
// - blocked: the stack pointer and pc of /proc/self/task/TID/syscall (read by the sampler
//   thread), from which the stack is scanned for return addresses (no registers but those
//   two are available for a sleeping thread), then the frame-pointer chain is followed from
//   the first frame record found.
// Code built without frame pointers gives fewer frames (the walk stops early), never a
// crash: every read goes through safe_read.h.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpuwatch::inject {

constexpr int kNativeFrames = 16;

// Frame-pointer walk: out[0] = pc, then the return address of each frame record
// ([fp] = the caller's fp, [fp + 8] = return address, on x86-64 and AArch64 alike). Stops at
// a read that fails, a frame pointer that does not move up the stack (or jumps more than
// kMaxFrameBytes), or a null return address. `in_signal`: reads with SignalSafeRead.
int WalkFramePointers(uintptr_t pc, uintptr_t fp, uintptr_t sp, uintptr_t* out, int max, bool in_signal);
constexpr uintptr_t kMaxFrameBytes = 1 << 20;

// The process's executable segments (dl_iterate_phdr), to tell a return address from data
// on a scanned stack. Sampler thread only; Refresh() now and then (libraries are loaded late).
class CodeRanges {
 public:
  static constexpr size_t kMaxRanges = 4096;
  void Refresh();
  bool Contains(uintptr_t pc) const;
  // A code address right after a call instruction (x86-64: the call encodings; elsewhere
  // any code address, 4-byte aligned on AArch64).
  bool IsReturnAddress(uintptr_t pc) const;
  void AddForTest(uintptr_t lo, uintptr_t hi);

 private:
  struct Range {
    uintptr_t lo, hi;
  };
  std::vector<Range> ranges_;  // sorted by lo
};

// A blocked thread's stack from its stack pointer: out[0] = pc, then return addresses
// found in the first kScanBytes above sp, following the frame-pointer chain from the first
// frame record (a saved fp pointing further up, next to a return address).
int ScanStack(uintptr_t pc, uintptr_t sp, const CodeRanges& code, uintptr_t* out, int max);
constexpr size_t kScanBytes = 8192;

}  // namespace gpuwatch::inject
