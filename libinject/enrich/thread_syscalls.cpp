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

#include "record/own_fd.h"

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

}  // namespace

// Every descriptor kept (all instances: the sampler has one, tests several), for the fork
// child handler, which runs in the child's only thread. A slot is claimed (-2), filled, then
// given its descriptor; a fork in the middle of that leaves it claimed, or its file's
// identity not yet matching, and the child leaves it open.
struct KeptFile {
  std::atomic<int> fd{-1};
  std::atomic<uint64_t> dev{0}, ino{0};
  // The descriptor still refers to the file opened: the job may have closed it and reused
  // the number.
  bool Ours() const {
    return StillRefersTo(fd.load(std::memory_order_acquire),
                         {dev.load(std::memory_order_relaxed), ino.load(std::memory_order_relaxed)});
  }
};

namespace {

constexpr size_t kKeptSlots = 64;
KeptFile g_kept[kKeptSlots];

void CloseKeptInChild() {
  for (KeptFile& k : g_kept) {
    if (k.Ours()) close(k.fd.load(std::memory_order_relaxed));
    k.fd.store(-1, std::memory_order_relaxed);
  }
}

// A slot for `fd` (opened as `st`), or null: none free, the file is not kept.
KeptFile* Keep(int fd, const struct stat& st) {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(nullptr, nullptr, CloseKeptInChild); });
  for (KeptFile& k : g_kept) {
    int free = -1;
    if (!k.fd.compare_exchange_strong(free, -2, std::memory_order_acq_rel)) continue;
    k.dev.store(st.st_dev, std::memory_order_relaxed);
    k.ino.store(st.st_ino, std::memory_order_relaxed);
    k.fd.store(fd, std::memory_order_release);
    return &k;
  }
  return nullptr;
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

void ThreadSyscalls::Forget(File& f) {
  const int fd = f.kept->fd.load(std::memory_order_relaxed);
  const bool ours = f.kept->Ours();
  f.kept->fd.store(-1, std::memory_order_release);  // the slot is free again
  if (ours) close(fd);
}

bool ThreadSyscalls::Read(uint32_t tid, int32_t* nr, uintptr_t* sp, uintptr_t* pc) {
  char text[256];
  auto it = std::find_if(files_.begin(), files_.end(), [&](const File& f) { return f.tid == tid; });
  if (it != files_.end()) {
    if (it->kept->Ours() && ReadAt0(it->kept->fd.load(std::memory_order_relaxed), text)) {
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
  KeptFile* kept = got && files_.size() < kMaxOpen && fd < keep_below_ && fstat(fd, &st) == 0 ? Keep(fd, st) : nullptr;
  if (kept) files_.push_back({tid, kept, true});
  else close(fd);
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
    if (f.tid == tid) return f.kept->fd.load(std::memory_order_relaxed);
  return -1;
}

}  // namespace gpuwatch::inject
