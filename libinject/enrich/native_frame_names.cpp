// See native_frame_names.h.
#include "enrich/native_frame_names.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <sys/syscall.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gpuwatch::inject {

std::string NativeFrameName(uintptr_t pc, bool offset) {
  Dl_info info{};
  char buf[512];
  void* addr = reinterpret_cast<void*>(pc);
  if (!dladdr(addr, &info) || !info.dli_fname) {
    std::snprintf(buf, sizeof buf, "%p", addr);
    return buf;
  }
  const char* lib = std::strrchr(info.dli_fname, '/');
  lib = lib ? lib + 1 : info.dli_fname;
  if (!*lib) lib = "main";  // the executable, as dladdr names it from some loaders
  if (!info.dli_sname) {
    std::snprintf(buf, sizeof buf, "%s+0x%lx", lib, static_cast<unsigned long>(pc - reinterpret_cast<uintptr_t>(info.dli_fbase)));
    return buf;
  }
  int status = 0;
  char* demangled = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
  const char* name = status == 0 && demangled ? demangled : info.dli_sname;
  if (offset)
    std::snprintf(buf, sizeof buf, "%s+0x%lx (%s)", name, static_cast<unsigned long>(pc - reinterpret_cast<uintptr_t>(info.dli_saddr)), lib);
  else
    std::snprintf(buf, sizeof buf, "%s (%s)", name, lib);
  std::free(demangled);
  return buf;
}

std::string SyscallName(int32_t nr) {
  struct Known {
    long nr;
    const char* name;
  };
  // The ones a training loop's host thread blocks in (x86-64 and AArch64 number them apart).
  static constexpr Known kKnown[] = {
      {SYS_read, "read"},        {SYS_write, "write"},       {SYS_pread64, "pread64"},    {SYS_pwrite64, "pwrite64"},
      {SYS_readv, "readv"},      {SYS_writev, "writev"},     {SYS_preadv, "preadv"},      {SYS_preadv2, "preadv2"},
      {SYS_recvfrom, "recvfrom"}, {SYS_recvmsg, "recvmsg"},  {SYS_sendto, "sendto"},      {SYS_sendmsg, "sendmsg"},
      {SYS_futex, "futex"},      {SYS_ppoll, "ppoll"},       {SYS_pselect6, "pselect6"},  {SYS_epoll_pwait, "epoll_pwait"},
      {SYS_nanosleep, "nanosleep"}, {SYS_clock_nanosleep, "clock_nanosleep"}, {SYS_ioctl, "ioctl"},
      {SYS_openat, "openat"},    {SYS_fsync, "fsync"},       {SYS_fdatasync, "fdatasync"}, {SYS_io_getevents, "io_getevents"},
      {SYS_io_uring_enter, "io_uring_enter"}, {SYS_sched_yield, "sched_yield"}, {SYS_wait4, "wait4"},
      {SYS_accept4, "accept4"},  {SYS_connect, "connect"},   {SYS_rt_sigtimedwait, "rt_sigtimedwait"},
#if defined(SYS_poll)
      {SYS_poll, "poll"},        {SYS_select, "select"},     {SYS_epoll_wait, "epoll_wait"}, {SYS_accept, "accept"},
#endif
  };
  for (const Known& k : kKnown)
    if (k.nr == nr) return k.name;
  return "syscall " + std::to_string(nr);
}

const std::string& NativeFrameNames::Name(uintptr_t pc, bool innermost) {
  // A caller's return address is after its call, maybe in the next function: name the call.
  const uintptr_t at = innermost || pc == 0 ? pc : pc - 1;
  auto it = names_.find(at);
  if (it != names_.end()) return it->second;
  if (names_.size() >= kMaxNames) names_.clear();
  return names_.emplace(at, NativeFrameName(at, false)).first->second;
}

uint32_t NativeFrameNames::StackOf(const HostSampler::NativeSample& s) {
  if (s.n <= 0) return 0;
  NativeStackText text;
  if (s.syscall >= 0) text.blocked_in = SyscallName(s.syscall);
  std::string key = text.blocked_in;
  for (int i = 0; i < s.n && i < kNativeFrames; ++i) {
    text.frames.push_back(Name(s.pcs[i], i == 0));
    key += '\n';
    key += text.frames.back();
  }
  auto it = by_key_.find(key);
  if (it != by_key_.end()) return it->second;
  if (stacks_.size() >= kMaxStacks) return 0;
  stacks_.push_back(std::move(text));
  const uint32_t id = kNativeStackIdBase + static_cast<uint32_t>(stacks_.size());
  by_key_.emplace(std::move(key), id);
  return id;
}

bool NativeFrameNames::Find(uint32_t id, NativeStackText* out) const {
  if (id <= kNativeStackIdBase || id - kNativeStackIdBase > stacks_.size()) return false;
  *out = stacks_[id - kNativeStackIdBase - 1];
  return true;
}

NativeFrameNames& NativeNames() {
  static NativeFrameNames* n = new NativeFrameNames;  // leaked: the sender may run during exit
  return *n;
}

bool FindNativeStack(uint32_t id, NativeStackText* out) { return NativeNames().Find(id, out); }

}  // namespace gpuwatch::inject
