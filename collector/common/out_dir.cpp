// See out_dir.h.
#include "common/out_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gpuwatch::collector {

std::string ErrnoWhy(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

bool WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (w == 0) errno = ENOSPC;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

std::string ChooseOutDir(const std::string& override_dir, const std::string& first_out_dir) {
  if (!override_dir.empty()) return override_dir;
  if (!first_out_dir.empty() && first_out_dir[0] == '/') return first_out_dir;
  return "./gpuwatch-out";
}

bool MakeDirs(const std::string& dir, std::string* error, unsigned mode) {
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    partial = dir.substr(0, pos);
    if (partial.empty()) continue;
    if (mkdir(partial.c_str(), static_cast<mode_t>(mode)) != 0 && errno != EEXIST) {
      *error = ErrnoWhy("cannot create", partial);
      return false;
    }
  }
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    errno = errno ? errno : ENOTDIR;
    *error = ErrnoWhy("cannot use output directory", dir);
    return false;
  }
  return true;
}

}  // namespace gpuwatch::collector
