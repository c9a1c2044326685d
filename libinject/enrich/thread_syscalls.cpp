// See thread_syscalls.h.
#include "enrich/thread_syscalls.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace gpuwatch::inject {
namespace {

// "running", or "NR ARG1..ARG6 SP PC" ("-1 SP PC" when blocked outside a syscall).
bool Parse(char* text, int32_t* nr, uintptr_t* sp, uintptr_t* pc) {
  if (std::strncmp(text, "running", 7) == 0) {
    *nr = ThreadSyscalls::kRunning;
    return true;
  }
  char* p = text;
  char* end = nullptr;
  const long number = std::strtol(p, &end, 10);
  if (end == p) return false;
  p = end;
  uintptr_t words[8] = {};
  int n = 0;
  while (n < 8) {
    const unsigned long long v = std::strtoull(p, &end, 16);
    if (end == p) break;
    words[n++] = static_cast<uintptr_t>(v);
    p = end;
  }
  if (n < 2) return false;
  *nr = number < 0 ? ThreadSyscalls::kBlockedOutsideSyscall : static_cast<int32_t>(number);
  *sp = words[n - 2];  // the last two, whatever came before
  *pc = words[n - 1];
  return true;
}

// Every descriptor kept (all instances: the sampler has one, tests several), for the fork
// child handler, which runs in the child's only thread. A slot is claimed (-2), filled, then
// given its descriptor; a fork in the middle of that leaves it claimed, or its file's
// identity not yet matching, and the child leaves it open.
struct Kept {
  std::atomic<int> fd{-1};
  std::atomic<uint64_t> dev{0}, ino{0};
};
constexpr size_t kKeptSlots = 64;
Kept g_kept[kKeptSlots];

void CloseKeptInChild() {
  for (Kept& k : g_kept) {
    const int fd = k.fd.load(std::memory_order_acquire);
    if (fd < 0) continue;
    struct stat st{};
    if (fstat(fd, &st) == 0 && st.st_dev == k.dev.load(std::memory_order_relaxed) &&
        st.st_ino == k.ino.load(std::memory_order_relaxed))
      close(fd);
    k.fd.store(-1, std::memory_order_relaxed);
  }
}

bool Publish(int fd, dev_t dev, ino_t ino) {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(nullptr, nullptr, CloseKeptInChild); });
  for (Kept& k : g_kept) {
    int free = -1;
    if (!k.fd.compare_exchange_strong(free, -2, std::memory_order_acq_rel)) continue;
    k.dev.store(dev, std::memory_order_relaxed);
    k.ino.store(ino, std::memory_order_relaxed);
    k.fd.store(fd, std::memory_order_release);
    return true;
  }
  return false;  // not kept: read by opening each time
}

void Unpublish(int fd) {
  for (Kept& k : g_kept) {
    int expected = fd;
    if (k.fd.compare_exchange_strong(expected, -1, std::memory_order_acq_rel)) return;
  }
}

// The file's text from its start; false when it cannot be read (the thread is gone).
bool ReadAt0(int fd, char (&text)[256]) {
  const ssize_t got = pread(fd, text, sizeof text - 1, 0);
  if (got <= 0) return false;
  text[got] = '\0';
  return true;
}

}  // namespace

ThreadSyscalls::~ThreadSyscalls() {
  for (File& f : files_) Forget(f);
}

bool ThreadSyscalls::Ours(const File& f) {
  struct stat st{};
  return fstat(f.fd, &st) == 0 && st.st_dev == f.dev && st.st_ino == f.ino;
}

void ThreadSyscalls::Forget(File& f) {
  Unpublish(f.fd);
  if (Ours(f)) close(f.fd);
  f.fd = -1;
}

bool ThreadSyscalls::Read(uint32_t tid, int32_t* nr, uintptr_t* sp, uintptr_t* pc) {
  char text[256];
  auto it = std::find_if(files_.begin(), files_.end(), [&](const File& f) { return f.tid == tid; });
  if (it != files_.end()) {
    if (Ours(*it) && ReadAt0(it->fd, text)) {
      it->seen = true;
      return Parse(text, nr, sp, pc);
    }
    // The thread is gone (a new one may have its id: opened again below), or the job closed
    // the descriptor (and may use the number: not ours to touch).
    Forget(*it);
    files_.erase(it);
  }
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%u/syscall", tid);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool got = ReadAt0(fd, text);
  if (keep_below_ < 0) {
    rlimit lim{};
    keep_below_ = getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY
                      ? static_cast<int>(std::min<rlim_t>(lim.rlim_cur / 4, 1 << 20))
                      : 1 << 20;
  }
  struct stat st{};
  if (got && files_.size() < kMaxOpen && fd < keep_below_ && fstat(fd, &st) == 0 && Publish(fd, st.st_dev, st.st_ino)) {
    files_.push_back({tid, fd, st.st_dev, st.st_ino, true});
  } else {
    close(fd);
  }
  return got && Parse(text, nr, sp, pc);
}

void ThreadSyscalls::Sweep() {
  auto gone = std::remove_if(files_.begin(), files_.end(), [](File& f) {
    if (f.seen) {
      f.seen = false;
      return false;
    }
    Forget(f);
    return true;
  });
  files_.erase(gone, files_.end());
}

int ThreadSyscalls::fd_for_test(uint32_t tid) const {
  for (const File& f : files_)
    if (f.tid == tid) return f.fd;
  return -1;
}

}  // namespace gpuwatch::inject
