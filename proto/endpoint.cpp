#include "endpoint.h"

#include <cerrno>
#include <cstdlib>
#include <sys/stat.h>
#include <unistd.h>

namespace gpuwatch::wire {

std::string SocketDir(std::string* error) {
  const char* env = std::getenv("GPUWATCH_SOCKET_DIR");
  std::string dir = (env && *env) ? env : "/tmp/gpuwatch-" + std::to_string(getuid());
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    if (error) *error = "cannot create " + dir;
    return "";
  }
  struct stat st {};
  // lstat: a symlink planted by someone else must not redirect us.
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
      (st.st_mode & 0077) != 0) {
    if (error) *error = dir + " is not a directory owned by this user with mode 0700";
    return "";
  }
  return dir;
}

std::string CollectorSocketPath(std::string* error) {
  const char* env = std::getenv("GPUWATCH_COLLECTOR");
  if (env && *env) {
    std::string s = env;
    if (s.rfind("unix:", 0) == 0) s = s.substr(5);
    return s;
  }
  std::string dir = SocketDir(error);
  return dir.empty() ? "" : dir + "/collector.sock";
}

}  // namespace gpuwatch::wire
