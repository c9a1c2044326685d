// gpuwatch's long-lived descriptors known by what they refer to (record/own_fd.h): a number
// the job closed and took for a file or socket of its own is never used, nor closed, by us.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "record/own_fd.h"

namespace gi = gpuwatch::inject;

namespace {

// A file that stays on disk until the test ends, as gpuwatch's do: a file deleted and closed
// frees its inode number, which the file system may give the next file (own_fd.h).
struct TempFiles {
  std::vector<std::string> paths;
  ~TempFiles() {
    for (const auto& p : paths) unlink(p.c_str());
  }
  int Make() {
    char path[] = "/tmp/gw-own-fd-XXXXXX";
    const int fd = mkostemp(path, O_CLOEXEC);
    REQUIRE(fd >= 0);
    paths.push_back(path);
    return fd;
  }
};

bool IsOpen(int fd) { return fcntl(fd, F_GETFD) != -1; }

}  // namespace

TEST_CASE("inject: own fd: ours until the job closes it and takes the number for a file of its own") {
  TempFiles files;
  gi::OwnFd fd(files.Make());
  REQUIRE(fd.held());
  CHECK(fd.Ours());
  const int number = fd.get();
  REQUIRE(close(number) == 0);  // the job closes it...
  CHECK_FALSE(fd.Ours());
  const int job = files.Make();  // ...and gets the number back for its own file
  REQUIRE(job == number);
  CHECK_FALSE(fd.Ours());
  fd.Close();  // must not close the job's file
  CHECK_FALSE(fd.held());
  CHECK(IsOpen(job));
  close(job);
}

TEST_CASE("inject: own fd: a socket's number reused for another socket is told apart") {
  int ours[2], theirs[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ours) == 0);
  gi::OwnFd fd(ours[0]);
  CHECK(fd.Ours());
  close(ours[0]);
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, theirs) == 0);
  REQUIRE((theirs[0] == ours[0] || theirs[1] == ours[0]));
  CHECK_FALSE(fd.Ours());
  {
    gi::OwnFd moved = std::move(fd);  // moving keeps the identity; destroying closes nothing of the job's
    CHECK_FALSE(fd.held());
    CHECK_FALSE(moved.Ours());
  }
  CHECK(IsOpen(theirs[0]));
  CHECK(IsOpen(theirs[1]));
  close(theirs[0]);
  close(theirs[1]);
  close(ours[1]);
}

TEST_CASE("inject: own fd: closed when still ours, and its descriptors are close-on-exec") {
  TempFiles files;
  const int raw = files.Make();
  {
    gi::OwnFd fd(raw);
    CHECK((fcntl(fd.get(), F_GETFD) & FD_CLOEXEC) != 0);
  }
  CHECK_FALSE(IsOpen(raw));
  gi::OwnFd none(-1);
  CHECK_FALSE(none.held());
  CHECK_FALSE(none.Ours());
  CHECK(gi::FileIdOf(-1) == gi::FileId{});
}
