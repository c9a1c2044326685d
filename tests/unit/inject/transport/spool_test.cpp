// The spool's descriptor is gpuwatch's own (record/own_fd.h): when the job closes it and
// takes the number for a file of its own, nothing is written there and the spool goes on in
// the same file, opened again.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "transport/spool.h"

namespace gi = gpuwatch::inject;

namespace {
bool IsOpen(int fd) { return fcntl(fd, F_GETFD) != -1; }
}  // namespace

TEST_CASE("inject: spool: a descriptor the job closed and reused is not written, the spool file is opened again") {
  char dir[] = "/tmp/gw-spool-XXXXXX";
  REQUIRE(mkdtemp(dir));
  gi::Spool spool;
  std::string error;
  REQUIRE(spool.Open(dir, 0, 1234, 1 << 20, &error));
  REQUIRE(spool.Append("first"));
  // The job closes every descriptor and opens a file of its own, which gets the spool's number.
  int spool_fd = -1;
  for (int fd = 3; fd < 1024; ++fd) {
    char link[64], target[512];
    std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    const ssize_t n = readlink(link, target, sizeof target - 1);
    if (n > 0 && std::string(target, n) == spool.path()) spool_fd = fd;
  }
  REQUIRE(spool_fd >= 0);
  close(spool_fd);
  const std::string job_path = std::string(dir) + "/job.txt";
  const int job = open(job_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  REQUIRE(job == spool_fd);
  CHECK(spool.Append("second"));
  CHECK(lseek(job, 0, SEEK_END) == 0);  // nothing of ours in the job's file
  CHECK(IsOpen(job));
  char text[64] = {};
  const int back = open(spool.path().c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(back >= 0);
  const ssize_t n = pread(back, text, sizeof text, 16);  // after the 16-byte header
  CHECK(std::string(text, n > 0 ? n : 0) == "firstsecond");
  close(back);
  close(job);
  unlink(job_path.c_str());
  unlink(spool.path().c_str());
}
