// See safe_read.h.
#include "record/safe_read.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <mutex>

#include "record/own_fd.h"

namespace gpuwatch::inject {
namespace {

std::atomic<bool> g_use_pipe{false};
std::atomic<uint64_t> g_calls{0};  // relaxed: a count for tests, off the hot path (the sampler, a new call site)

// The fallback: write() copies from our address space into a pipe and fails with EFAULT on
// an unmapped page. One pipe, a lock around write-then-read (reads are at most a few KiB,
// below the pipe's capacity, so neither end blocks).
// Its ends are checked before each read: a job that closed them and reuses the numbers must
// not get our memory written into its own file (record/own_fd.h); a new pipe is made then.
struct PipeReader {
  std::mutex mu;
  OwnFd fd[2];
  PipeReader() { Open(); }
  bool Ours() const { return fd[0].Ours() && fd[1].Ours(); }
  bool Open() {
    int f[2] = {-1, -1};
    if (pipe2(f, O_CLOEXEC | O_NONBLOCK) != 0) return false;
    fd[0] = OwnFd(f[0]);
    fd[1] = OwnFd(f[1]);
    return Ours();
  }
};

PipeReader& Pipe() {
  static PipeReader* p = new PipeReader;  // leaked: used until exit
  return *p;
}

constexpr size_t kPipeChunk = 4096;  // a pipe holds at least a page without blocking

bool PipeRead(uintptr_t addr, void* dst, size_t n) {
  PipeReader& p = Pipe();
  std::lock_guard<std::mutex> lock(p.mu);
  if (!p.Ours()) {
    p.fd[0].Close();  // each closed only if still ours
    p.fd[1].Close();
    if (!p.Open()) return false;
  }
  auto* out = static_cast<char*>(dst);
  for (size_t done = 0; done < n;) {
    const size_t len = n - done < kPipeChunk ? n - done : kPipeChunk;
    g_calls.fetch_add(1, std::memory_order_relaxed);
    // The raw syscall, not write(): the range is any memory by design (a frame reader reads a
    // span around a frame), and a sanitizer's write() would check it as the job's own data.
    const ssize_t w = syscall(SYS_write, p.fd[1].get(), reinterpret_cast<const void*>(addr + done), len);
    if (w <= 0) return false;  // EFAULT: not mapped (nothing was written)
    ssize_t got = 0;
    while (got < w) {  // drain what was written, even on a short write
      const ssize_t r = read(p.fd[0].get(), out + done + got, static_cast<size_t>(w - got));
      if (r <= 0) return false;
      got += r;
    }
    if (static_cast<size_t>(w) != len) return false;
    done += len;
  }
  return true;
}

}  // namespace

bool SafeRead(uintptr_t addr, void* dst, size_t n) {
  if (n == 0) return true;
  if (addr == 0 || addr + n < addr) return false;
  if (!g_use_pipe.load(std::memory_order_relaxed)) {
    iovec local{dst, n};
    iovec remote{reinterpret_cast<void*>(addr), n};
    g_calls.fetch_add(1, std::memory_order_relaxed);
    const ssize_t r = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
    if (r == static_cast<ssize_t>(n)) return true;
    if (r >= 0 || errno == EFAULT || errno == ESRCH) return false;
    if (errno != ENOSYS && errno != EPERM) return false;
    g_use_pipe.store(true, std::memory_order_relaxed);  // refused here: the pipe from now on
  }
  return PipeRead(addr, dst, n);
}

size_t SafeReadEach(const SafeRange* ranges, size_t count) {
  constexpr size_t kMaxRanges = 64;  // a stack's worth; more go in further calls
  size_t done = 0;
  while (done < count) {
    iovec local[kMaxRanges], remote[kMaxRanges];
    size_t m = 0;
    for (; m < kMaxRanges && done + m < count; ++m) {  // those a syscall can take: none empty or wrapping
      const SafeRange& r = ranges[done + m];
      if (r.n == 0 || r.addr == 0 || r.addr + r.n < r.addr) break;
      local[m] = {r.dst, r.n};
      remote[m] = {reinterpret_cast<void*>(r.addr), r.n};
    }
    // A transfer stops at the first range it cannot read whole, never inside one (process_vm_readv(2)).
    ssize_t r = -1;
    if (m > 0 && !g_use_pipe.load(std::memory_order_relaxed)) {
      g_calls.fetch_add(1, std::memory_order_relaxed);
      r = process_vm_readv(getpid(), local, m, remote, m, 0);
    }
    if (r < 0) {  // the pipe, a range no syscall takes, the first one failed or the syscall is refused: SafeRead decides
      if (!SafeRead(ranges[done].addr, ranges[done].dst, ranges[done].n)) return done;
      ++done;
      continue;
    }
    size_t got = 0, bytes = 0;
    while (got < m && bytes + local[got].iov_len <= static_cast<size_t>(r)) bytes += local[got++].iov_len;
    done += got;
    if (got < m) return done;
  }
  return done;
}

bool SignalSafeRead(uintptr_t addr, void* dst, size_t n) {
  if (n == 0) return true;
  if (addr == 0 || addr + n < addr) return false;
  const int saved = errno;  // the interrupted code may be about to read it
  iovec local{dst, n};
  iovec remote{reinterpret_cast<void*>(addr), n};
  const ssize_t r = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
  errno = saved;
  return r == static_cast<ssize_t>(n);
}

uint64_t SafeReadCallsForTest() { return g_calls.load(std::memory_order_relaxed); }

void UsePipeReadsForTest(bool pipe) { g_use_pipe.store(pipe, std::memory_order_relaxed); }

}  // namespace gpuwatch::inject
