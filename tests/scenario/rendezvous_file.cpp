// See rendezvous_file.h.
#include "rendezvous_file.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <stdexcept>
#include <thread>
#include <unistd.h>

namespace gpuwatch::scenario {

void publish_blob(const std::string& dir, const std::string& name, const void* data, size_t size) {
  const std::string final_path = dir + "/" + name;
  const std::string tmp_path = final_path + ".tmp";
  int fd = ::open(tmp_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("cannot create " + tmp_path + ": " + std::strerror(errno));
  const char* p = static_cast<const char*>(data);
  size_t left = size;
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int e = errno;
      ::close(fd);
      throw std::runtime_error("cannot write " + tmp_path + ": " + std::strerror(e));
    }
    p += n;
    left -= size_t(n);
  }
  ::close(fd);
  if (::rename(tmp_path.c_str(), final_path.c_str()) != 0)
    throw std::runtime_error("cannot rename " + tmp_path + ": " + std::strerror(errno));
}

void unpublish_blob(const std::string& dir, const std::string& name) {
  ::unlink((dir + "/" + name).c_str());
  ::rmdir(dir.c_str());
}

std::vector<char> wait_blob(const std::string& dir, const std::string& name, size_t size, double timeout_s) {
  const std::string path = dir + "/" + name;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  // Poll every millisecond: rank 0 publishes within milliseconds of starting, and a
  // blocking mechanism (inotify) would buy nothing for a one-time wait.
  while (true) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      std::vector<char> buf(size);
      size_t got = 0;
      while (got < size) {
        ssize_t n = ::read(fd, buf.data() + got, size - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += size_t(n);
      }
      ::close(fd);
      if (got != size) throw std::runtime_error(path + ": expected " + std::to_string(size) + " bytes, found " + std::to_string(got));
      return buf;
    }
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error("timed out after " + std::to_string(int(timeout_s)) + " s waiting for " + path + " (did rank 0 start?)");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace gpuwatch::scenario
