// dlsym, for the driver functions a library takes straight from libcuda.so.1: Triton's
// launcher does dlopen("libcuda.so.1") + dlsym(handle, "cuLaunchKernelEx"), which no
// preloaded definition can interpose. The function handed back for a symbol gpuwatch wraps
// (launches, graph launches, allocations: hooks_cuda_driver.cpp, hooks_driver_memory.cpp)
// becomes its wrapper, as for cudaGetDriverEntryPoint.
//
// glibc's dlsym names its caller by its return address (RTLD_NEXT searches after the
// caller's object; RTLD_DEFAULT searches the caller's namespace), so a wrapper that *calls*
// the real dlsym would make every dlsym(RTLD_NEXT, ...) in the process search after
// libgpuwatch.so: another interposer asking for the next malloc would get its own. So the
// entry is a few instructions that *jump* to the real dlsym, return address untouched, for
// RTLD_DEFAULT and RTLD_NEXT, and to gw_dlsym_wrapped (which calls it) only for an explicit
// handle, where glibc does not look at the caller. x86-64 only; elsewhere dlsym is not
// interposed (driver launches made through it are seen by CUPTI alone).
//
// dlsym(RTLD_DEFAULT, "cudaMalloc") is also how a program asks whether the CUDA runtime is
// here: without gpuwatch it finds nothing when no runtime is loaded, so neither may the
// wrapper gpuwatch exports under that name (gw_dlsym_default_hides).
#include <dlfcn.h>

#include <cstring>
#include <initializer_list>

#include "hooks/weak_refs.h"
#include "record/real.h"

namespace gpuwatch::inject::hooks {
__attribute__((visibility("hidden"))) void WrapDriverSymbol(const char* symbol, void** fn);
}  // namespace gpuwatch::inject::hooks

#if defined(__x86_64__) && defined(__linux__)

namespace {

using DlsymFn = void* (*)(void*, const char*);

void* NoDlsym(void*, const char*) { return nullptr; }

// A driver symbol (cu..., not the runtime's cuda...) asked for by a library other than the
// CUDA stack's own (the runtime, NCCL and CUPTI load libcuda.so.1 for their internals; their
// calls are not the job's).
bool JobAsksForDriverSymbol(const char* name, const void* caller) {
  if (!name || name[0] != 'c' || name[1] != 'u' || !std::strncmp(name, "cuda", 4)) return false;
  Dl_info info{};
  if (!caller || !dladdr(caller, &info) || !info.dli_fname) return true;
  const char* base = std::strrchr(info.dli_fname, '/');
  base = base ? base + 1 : info.dli_fname;
  for (const char* own : {"libcudart", "libnccl", "libcupti", "libcuda."})
    if (!std::strncmp(base, own, std::strlen(own))) return false;
  return true;
}

}  // namespace

extern "C" {

// The real dlsym (the next definition after this library: libc's, or libdl's before glibc
// 2.34), found on the first call.
__attribute__((visibility("hidden"))) DlsymFn gw_real_dlsym = nullptr;

// Not instrumented when the library is built with a sanitizer: its's runtime looks up the
// functions it intercepts with dlsym(RTLD_NEXT) while it starts, before instrumented code
// may run, and that reaches here first.
#define GW_UNINSTRUMENTED __attribute__((no_sanitize("address", "undefined", "thread")))

__attribute__((visibility("hidden"), used)) GW_UNINSTRUMENTED DlsymFn gw_resolve_dlsym() {
  void* p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (!p) p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  const DlsymFn real = p ? reinterpret_cast<DlsymFn>(p) : NoDlsym;
  __atomic_store_n(&gw_real_dlsym, real, __ATOMIC_RELEASE);
  return real;
}

// An explicit handle: entered by a jump from dlsym below, so the return address is the
// job's call site.
__attribute__((visibility("hidden"), used, noinline)) void* gw_dlsym_wrapped(void* handle, const char* name) {
  const void* caller = __builtin_return_address(0);
  DlsymFn real = __atomic_load_n(&gw_real_dlsym, __ATOMIC_ACQUIRE);
  if (!real) real = gw_resolve_dlsym();
  void* p = real(handle, name);
  if (p && JobAsksForDriverSymbol(name, caller)) gpuwatch::inject::hooks::WrapDriverSymbol(name, &p);
  gpuwatch::inject::hooks::ClearWeakRefsIfLoaded();  // a dlsym with a handle usually follows a dlopen
  return p;
}

// RTLD_DEFAULT: true when `name` would find only gpuwatch's wrapper, its real function not
// being loaded; the entry below then answers null. Looked up from here, RTLD_DEFAULT searches
// the global scope, where the preloaded library comes first: the job's own lookup finds the
// same wrapper. Other names are left to the real dlsym, called with the job's return address.
__attribute__((visibility("hidden"), used)) GW_UNINSTRUMENTED int gw_dlsym_default_hides(void*, const char* name) {
  if (!gpuwatch::inject::hooks::IsCudaStackName(name)) return 0;
  gpuwatch::inject::hooks::ClearWeakRefsIfLoaded();
  DlsymFn real = __atomic_load_n(&gw_real_dlsym, __ATOMIC_ACQUIRE);
  if (!real) real = gw_resolve_dlsym();
  void* p = real(RTLD_DEFAULT, name);
  Dl_info found{}, self{};
  if (!p || !dladdr(p, &found) || !dladdr(reinterpret_cast<void*>(&gw_dlsym_default_hides), &self) ||
      found.dli_fbase != self.dli_fbase)
    return 0;
  return gpuwatch::inject::ResolveReal(name) == nullptr ? 1 : 0;
}

}  // extern "C"

// void* dlsym(void* handle, const char* name): rdi = handle, rsi = name.
asm(R"(
  .text
  # Calls \fn(rdi, rsi) and keeps both for the jump that follows (the stack stays 16-byte aligned).
  .macro GW_CALL_KEEPING_ARGS fn
  pushq %rdi
  .cfi_adjust_cfa_offset 8
  pushq %rsi
  .cfi_adjust_cfa_offset 8
  subq $8, %rsp
  .cfi_adjust_cfa_offset 8
  call \fn
  addq $8, %rsp
  .cfi_adjust_cfa_offset -8
  popq %rsi
  .cfi_adjust_cfa_offset -8
  popq %rdi
  .cfi_adjust_cfa_offset -8
  .endm

  .globl dlsym
  .type dlsym, @function
  .p2align 4
dlsym:
  .cfi_startproc
  testq %rdi, %rdi              # RTLD_DEFAULT
  jne 3f
  GW_CALL_KEEPING_ARGS gw_dlsym_default_hides  # a probe for an absent CUDA function finds nothing
  testl %eax, %eax
  jz 1f
  xorl %eax, %eax
  ret
3:
  cmpq $-1, %rdi                # RTLD_NEXT
  je 1f
  jmp gw_dlsym_wrapped
1:
  movq gw_real_dlsym(%rip), %rax
  testq %rax, %rax
  jz 2f
  jmp *%rax                     # the real dlsym sees the job's return address
2:
  GW_CALL_KEEPING_ARGS gw_resolve_dlsym  # first call: find it
  jmp *%rax
  .cfi_endproc
  .size dlsym, .-dlsym
)");

#endif
