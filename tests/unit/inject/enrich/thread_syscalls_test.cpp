// The sampler's view of a native thread from /proc/self/task/TID/syscall, its file kept
// open between reads: it must read the same as a fresh open, notice a thread gone, and never
// read or close a descriptor that the job closed and took for a file of its own.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "enrich/thread_syscalls.h"

namespace gi = gpuwatch::inject;

namespace {

uint32_t Tid() { return static_cast<uint32_t>(syscall(SYS_gettid)); }

// A thread blocked in read() on a pipe until Release().
struct BlockedReader {
  int fds[2] = {-1, -1};
  std::atomic<uint32_t> tid{0};
  std::thread thread;
  BlockedReader() {
    REQUIRE(pipe(fds) == 0);
    thread = std::thread([this] {
      tid = Tid();
      char ch;
      (void)!read(fds[0], &ch, 1);
    });
    while (!tid) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // in read() by now
  }
  void Release() {
    if (!thread.joinable()) return;
    REQUIRE(write(fds[1], "x", 1) == 1);
    thread.join();
  }
  ~BlockedReader() {
    Release();
    close(fds[0]);
    close(fds[1]);
  }
};

// Reads `reader` once and returns the descriptor kept for it.
int KeptFd(gi::ThreadSyscalls& files, const BlockedReader& reader) {
  int32_t nr = 0;
  uintptr_t sp = 0, pc = 0;
  REQUIRE(files.Read(reader.tid, &nr, &sp, &pc));
  CHECK(nr == SYS_read);
  const int fd = files.fd_for_test(reader.tid);
  REQUIRE(fd >= 0);
  return fd;
}

}  // namespace

TEST_CASE("thread syscalls: a blocked thread read twice from one open file, a running one, one gone") {
  gi::ThreadSyscalls files;
  BlockedReader reader;
  int32_t nr = 0;
  uintptr_t sp = 0, pc = 0;
  REQUIRE(files.Read(reader.tid, &nr, &sp, &pc));
  CHECK(nr == SYS_read);
  CHECK(sp != 0);
  CHECK(pc != 0);
  const int fd = files.fd_for_test(reader.tid);
  REQUIRE(fd >= 0);
  CHECK(files.open_files() == 1);
  nr = 0;
  REQUIRE(files.Read(reader.tid, &nr, &sp, &pc));  // read again from its start
  CHECK(nr == SYS_read);
  CHECK(files.fd_for_test(reader.tid) == fd);

  std::atomic<bool> stop{false};
  std::atomic<uint32_t> spinner_tid{0};
  std::thread spinner([&] {
    spinner_tid = Tid();
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  while (!spinner_tid) std::this_thread::yield();
  const bool read_spinner = files.Read(spinner_tid, &nr, &sp, &pc);
  stop = true;
  spinner.join();
  REQUIRE(read_spinner);
  CHECK(nr == gi::ThreadSyscalls::kRunning);
  CHECK(files.open_files() == 2);

  reader.Release();
  CHECK_FALSE(files.Read(reader.tid, &nr, &sp, &pc));  // gone: its file closed
  CHECK(files.fd_for_test(reader.tid) == -1);
  CHECK(fcntl(fd, F_GETFD) == -1);
  CHECK(files.open_files() == 1);  // the spinner's: its thread is gone too, but not read since
  files.Sweep();  // read since the last sweep: kept
  CHECK(files.open_files() == 1);
  files.Sweep();  // and not since: closed
  CHECK(files.open_files() == 0);
}

TEST_CASE("thread syscalls: a descriptor the job closed and reused is neither read nor closed") {
  gi::ThreadSyscalls files;
  BlockedReader reader;
  const int fd = KeptFd(files, reader);
  int32_t nr = 0;
  uintptr_t sp = 0, pc = 0;
  // The job closes every descriptor it does not know (as some daemons do), then opens a file
  // of its own that takes the same number.
  REQUIRE(close(fd) == 0);
  const int job_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  REQUIRE(job_fd == fd);
  REQUIRE(files.Read(reader.tid, &nr, &sp, &pc));  // opened again
  CHECK(nr == SYS_read);
  CHECK(files.fd_for_test(reader.tid) != job_fd);
  files.Sweep();
  files.Sweep();  // closes ours, not the job's
  CHECK(files.open_files() == 0);
  CHECK(fcntl(job_fd, F_GETFD) != -1);
  close(job_fd);
}

TEST_CASE("thread syscalls: no descriptor kept once the job holds a quarter of its limit") {
  gi::ThreadSyscalls files;
  BlockedReader reader;
  int32_t nr = 0;
  uintptr_t sp = 0, pc = 0;
  const int next = open("/dev/null", O_RDONLY | O_CLOEXEC);  // the number the next open gets
  REQUIRE(next >= 0);
  close(next);
  files.SetKeepBelowForTest(next);  // as if the job held a quarter of its limit already
  REQUIRE(files.Read(reader.tid, &nr, &sp, &pc));
  CHECK(nr == SYS_read);  // read all the same
  CHECK(files.open_files() == 0);
  CHECK(files.fd_for_test(reader.tid) == -1);
  CHECK(fcntl(next, F_GETFD) == -1);  // closed after the read
  files.SetKeepBelowForTest(next + 1);
  REQUIRE(files.Read(reader.tid, &nr, &sp, &pc));
  CHECK(files.open_files() == 1);
}

TEST_CASE("thread syscalls: a forked child does not inherit the kept descriptors") {
  gi::ThreadSyscalls files;
  BlockedReader reader;
  const int fd = KeptFd(files, reader);
  const int job_fd = open("/dev/null", O_RDONLY);  // the job's own: the child keeps it
  REQUIRE(job_fd >= 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) _exit(fcntl(fd, F_GETFD) == -1 && fcntl(job_fd, F_GETFD) != -1 ? 0 : 1);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(fcntl(fd, F_GETFD) != -1);  // the parent's still open
  CHECK(KeptFd(files, reader) == fd);
  close(job_fd);
}
