// Where a rank finds its collector, shared by both ends so they always agree.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace gpuwatch::wire {

// The per-user directory that holds the collector's socket and its start lock:
// $GPUWATCH_SOCKET_DIR, else /tmp/gpuwatch-<uid>. Created 0700 if missing. Returns "" and
// sets `error` if it exists but is not a directory owned by this user with mode 0700.
std::string SocketDir(std::string* error);

// $GPUWATCH_COLLECTOR when set to a path (or "unix:PATH"), else SocketDir()/collector.sock
// (the host's collector started by hand, serving every job; autostarted ones use
// JobSocketPath).
// A "tcp://" value is not a path: the default socket is used (the collector still listens
// on its Unix socket next to TCP).
std::string CollectorSocketPath(std::string* error);

// A job id as a file name, never a path: "job-", its first 12 characters with every one but
// [A-Za-z0-9._-] made '_' (for the reader), "-", then 12 hex digits (48 bits) of its FNV-1a
// hash (so ids that differ only in the replaced or cut characters still differ).
std::string JobFileStem(std::string_view job_id);

// Where the collector the library autostarts for one job listens, and where its stdin,
// stdout and stderr go (never the job's: a job's caller waits for EOF on the job's pipes).
// One collector per job id: two jobs never share one, nor wait for each other. The log file
// is also the lock that lets one process of the job start it.
std::string JobSocketPath(const std::string& socket_dir, std::string_view job_id);
std::string JobLogPath(const std::string& socket_dir, std::string_view job_id);

inline constexpr std::string_view kTcpScheme = "tcp://";
// The address TCP listens on when none is given: loopback, so a port opened "only when
// asked" is not reachable from other hosts unless the user names an address.
inline constexpr const char* kDefaultTcpHost = "127.0.0.1";

struct HostPort {
  std::string host;  // as written, without brackets ("::1" for "[::1]:5000")
  uint16_t port = 0;
};
// "HOST:PORT", "[V6ADDR]:PORT", ":PORT" or "PORT"; a missing HOST is kDefaultTcpHost.
// PORT 0..65535. False with `error` (one line) otherwise.
bool ParseHostPort(std::string_view s, HostPort* out, std::string* error);

// "HOST:PORT", with brackets around an IPv6 address.
std::string FormatHostPort(const HostPort& hp);

}  // namespace gpuwatch::wire
