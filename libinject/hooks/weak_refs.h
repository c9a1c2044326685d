// A program asks "is the CUDA runtime here?" with a weak reference (`extern int
// cudaDeviceSynchronize() __attribute__((weak))`, then `if (cudaDeviceSynchronize)`). The
// loader binds that reference to gpuwatch's exported wrapper whether or not the runtime is
// loaded. Where it is not, this takes the binding back: the reference reads null again, as
// it would without gpuwatch, and the program takes the path it takes without gpuwatch.
#pragma once

namespace gpuwatch::inject::hooks {

// Clears every weak, undefined data reference (GOT or absolute) of the loaded objects that
// holds one of this library's exports whose real function is not loaded. At load (the
// library's constructor), and again when objects were loaded since (dlsym with a handle,
// the usual next step after a dlopen). Never on a hot path: it walks relocation tables.
void ClearWeakRefsToAbsent();
// Same, only if objects were loaded since the last time (a counter read).
void ClearWeakRefsIfLoaded();

// A name of the CUDA stack's libraries (runtime, driver, CUPTI, NCCL): the exports a
// program may probe for. Our other exports (dlsym, NVTX's injection entry) are always there.
// Never instrumented: dlsym asks it while a sanitizer's runtime starts (hooks_dlsym.cpp).
__attribute__((no_sanitize("address", "undefined", "thread"))) inline bool IsCudaStackName(const char* name) {
  return name && ((name[0] == 'c' && name[1] == 'u') || (name[0] == 'n' && name[1] == 'c' && name[2] == 'c') ||
                  (name[0] == '_' && name[1] == '_' && name[2] == 'c' && name[3] == 'u'));
}

}  // namespace gpuwatch::inject::hooks
