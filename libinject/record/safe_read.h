// Reading memory that may not be mapped, without faulting: the Python frame reader
// (python_stack.h) follows pointers of another thread, or of a thread whose structures it
// only believes it knows. A bad address is a failed read, never a SIGSEGV in the job.
#pragma once
#include <cstddef>
#include <cstdint>

namespace gpuwatch::inject {

// Copies `n` bytes at `addr` into `dst`: true only when all of them could be read.
// process_vm_readv on our own pid (the kernel checks the pages); where a seccomp profile
// refuses it, a write() of the range into a pipe (EFAULT on a bad page) and a read back.
// Thread-safe; a syscall or two per call, no allocation after the first.
bool SafeRead(uintptr_t addr, void* dst, size_t n);

// Several reads in one call (one syscall where process_vm_readv is allowed): how many of
// `ranges`, from the first, were read whole. The first that cannot be read ends the count.
struct SafeRange {
  uintptr_t addr;
  void* dst;
  size_t n;
};
size_t SafeReadEach(const SafeRange* ranges, size_t count);

// The same read for a signal handler (record/native_signal.h): process_vm_readv only (no
// lock, no pipe fallback; where it is refused nothing can be read), errno left as it was.
bool SignalSafeRead(uintptr_t addr, void* dst, size_t n);

template <typename T>
bool SafeReadValue(uintptr_t addr, T* out) {
  return SafeRead(addr, out, sizeof(T));
}

// Tests: the reads (process_vm_readv calls, or pipe writes) made so far, all threads.
uint64_t SafeReadCallsForTest();

// Tests: force the pipe path (true) or go back to process_vm_readv (false).
void UsePipeReadsForTest(bool pipe);

}  // namespace gpuwatch::inject
