// What a thread of the job is doing now, as the kernel says: running, or blocked (in which
// syscall, at which sp and pc), from /proc/self/task/TID/syscall. For the host sampler's
// native frames (enrich/host_sampler.h), read every tick for every thread without Python.
//
// Each thread's file stays open and is read again from its start: opening it walks the path
// through /proc (/proc/self, the task's permission check), 6 us a read on the 2-core VM
// against 1.6 for reading an open one, and at 100 samples a second that walk was the largest
// part of the sampler's cost in a C++ job. The descriptors are the job's process's: before
// each read the file is checked (fstat) to be the one opened, so a descriptor the job closed
// and reused for a file of its own is never read, nor closed, by us. And they count against
// the job's RLIMIT_NOFILE ("Too many open files" is a common way for a DataLoader to die):
// at most kMaxOpen are kept, none once the job holds a quarter of its limit (the number a
// new descriptor gets says how many are open below it); past that, each read opens and
// closes, as before. A forked child (a DataLoader worker) would inherit them, and gpuwatch
// does not run there (record/recorder.h: OnForkChild): they are closed in the child.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <vector>

namespace gpuwatch::inject {

struct KeptFile;  // thread_syscalls.cpp: a kept descriptor, where the fork handler finds it too

class ThreadSyscalls {
 public:
  static constexpr int32_t kRunning = -2, kBlockedOutsideSyscall = -1;
  static constexpr size_t kMaxOpen = 16;  // more threads are read by opening their file each time

  ThreadSyscalls() = default;
  ThreadSyscalls(const ThreadSyscalls&) = delete;
  ThreadSyscalls& operator=(const ThreadSyscalls&) = delete;
  ~ThreadSyscalls();

  // `nr`: kRunning, kBlockedOutsideSyscall, or the syscall's number (then `sp`, `pc` are
  // the thread's). False when it cannot be read: the thread is gone.
  bool Read(uint32_t tid, int32_t* nr, uintptr_t* sp, uintptr_t* pc);
  // Closes the files of the threads not read since the last sweep (threads gone, or no
  // longer sampled natively).
  void Sweep();
  size_t open_files() const { return files_.size(); }
  // Tests: the descriptor kept for `tid` (-1: none).
  int fd_for_test(uint32_t tid) const;
  // Tests: descriptors from this number on are not kept (a quarter of RLIMIT_NOFILE).
  void SetKeepBelowForTest(int fd) { keep_below_ = fd; }

 private:
  struct File {
    uint32_t tid;
    KeptFile* kept;  // its descriptor, and the identity (device, inode) it was opened with
    bool seen;
  };
  static void Forget(File& f);  // closes it when still ours
  std::vector<File> files_;
  int keep_below_ = -1;  // -1: from RLIMIT_NOFILE, at the first open
};

}  // namespace gpuwatch::inject
