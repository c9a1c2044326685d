#include "endpoint.h"

#include "fnv1a.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

namespace gpuwatch::wire {

std::string SocketDir(std::string* error) {
  const char* env = std::getenv("GPUWATCH_SOCKET_DIR");
  std::string dir = (env && *env) ? env : "/tmp/gpuwatch-" + std::to_string(getuid());
  // Missing parents are made as `mkdir -p` would (as GPUWATCH_OUT's are); the directory
  // itself is private.
  for (size_t pos = dir.find('/', 1); pos != std::string::npos; pos = dir.find('/', pos + 1)) {
    if (mkdir(dir.substr(0, pos).c_str(), 0755) != 0 && errno != EEXIST) break;  // the last mkdir says why
  }
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    if (error) *error = "cannot create " + dir + ": " + std::strerror(errno);
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
  if (env && *env && std::string_view(env).substr(0, kTcpScheme.size()) != kTcpScheme) {
    std::string s = env;
    if (s.rfind("unix:", 0) == 0) s = s.substr(5);
    return s;
  }
  std::string dir = SocketDir(error);
  return dir.empty() ? "" : dir + "/collector.sock";
}

std::string JobFileStem(std::string_view job_id) {
  constexpr size_t kShown = 12;  // short: a Unix socket path has 107 bytes
  std::string stem = "job-";
  for (char c : job_id.substr(0, kShown)) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-';
    stem += safe ? c : '_';
  }
  const uint64_t h = Fnv1a(job_id);
  static constexpr char kHex[] = "0123456789abcdef";
  stem += '-';
  for (int shift = 44; shift >= 0; shift -= 4) stem += kHex[(h >> shift) & 0xf];  // 48 bits
  return stem;
}

std::string JobSocketPath(const std::string& socket_dir, std::string_view job_id) {
  return socket_dir + "/" + JobFileStem(job_id) + ".sock";
}

std::string JobLogPath(const std::string& socket_dir, std::string_view job_id) {
  return socket_dir + "/" + JobFileStem(job_id) + ".log";
}

bool ParseHostPort(std::string_view s, HostPort* out, std::string* error) {
  const std::string given(s);
  std::string_view host, port = s;
  if (!s.empty() && s.front() == '[') {  // [v6]:port
    const size_t close = s.find(']');
    if (close == std::string_view::npos || close + 1 >= s.size() || s[close + 1] != ':') {
      *error = "\"" + given + "\" is not HOST:PORT (IPv6: [ADDR]:PORT)";
      return false;
    }
    host = s.substr(1, close - 1);
    port = s.substr(close + 2);
  } else if (const size_t colon = s.rfind(':'); colon != std::string_view::npos) {
    host = s.substr(0, colon);
    port = s.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      *error = "\"" + given + "\": write an IPv6 address in brackets, [ADDR]:PORT";
      return false;
    }
  }
  unsigned long p = 0;
  bool ok = !port.empty() && port.size() <= 5;
  for (char c : port) {
    ok = ok && c >= '0' && c <= '9';
    if (ok) p = p * 10 + static_cast<unsigned long>(c - '0');
  }
  if (!ok || p > 65535) {
    *error = "\"" + given + "\" has no valid port (0-65535) after the host";
    return false;
  }
  out->host = host.empty() ? kDefaultTcpHost : std::string(host);
  out->port = static_cast<uint16_t>(p);
  return true;
}

std::string FormatHostPort(const HostPort& hp) {
  const bool v6 = hp.host.find(':') != std::string::npos;
  return (v6 ? "[" + hp.host + "]" : hp.host) + ":" + std::to_string(hp.port);
}

}  // namespace gpuwatch::wire
