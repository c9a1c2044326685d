// Native samples named for the collector (issue 16, a thread without Python): the host
// sampler's return addresses (enrich/host_sampler.h) become "function (library)" (dladdr,
// demangled; "library+0xOFF" where the library exports no symbol there) on the sender
// thread, never in the sampler or a signal handler. Whole stacks are interned, so a stack
// seen a thousand times is sent once, as a PythonStack with `native` set.
//
// Bounded: kMaxNames addresses named (then the cache starts over), kMaxStacks stacks (then
// 0: no stack). Sender thread only.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "enrich/host_sampler.h"

namespace gpuwatch::inject {

// Native stack ids share the wire's stack ids with Python stacks (record/python_stacks.h,
// at most 4096 of those): these start here.
constexpr uint32_t kNativeStackIdBase = 1u << 30;

// `pc` named: "symbol+0x1c (libfoo.so)" with `offset`, "symbol (libfoo.so)" without;
// "libfoo.so+0x1234" without a symbol; "0x7f..." outside every library.
std::string NativeFrameName(uintptr_t pc, bool offset);

// The syscall's name for this architecture ("read", "futex"), or "syscall N".
std::string SyscallName(int32_t nr);

struct NativeStackText {
  std::vector<std::string> frames;  // innermost first
  std::string blocked_in;           // the syscall the thread was blocked in; empty: running
};

class NativeFrameNames {
 public:
  static constexpr size_t kMaxNames = 65536, kMaxStacks = 4096;
  // The id of the sample's named stack (kNativeStackIdBase + k); 0 with no frame or a full table.
  uint32_t StackOf(const HostSampler::NativeSample& s);
  bool Find(uint32_t id, NativeStackText* out) const;

 private:
  const std::string& Name(uintptr_t pc, bool innermost);
  std::unordered_map<uintptr_t, std::string> names_;  // by address (the innermost's own, callers' - 1)
  std::vector<NativeStackText> stacks_;                // id - kNativeStackIdBase - 1
  std::unordered_map<std::string, uint32_t> by_key_;   // frames and syscall, joined
};

// The process's (the sender's), and its lookup for Definitions.
NativeFrameNames& NativeNames();
bool FindNativeStack(uint32_t id, NativeStackText* out);

}  // namespace gpuwatch::inject
