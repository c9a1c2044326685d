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

// $GPUWATCH_COLLECTOR when set to a path (or "unix:PATH"), else SocketDir()/collector.sock.
// A "tcp://" value is not a path: the default socket is used (the collector still listens
// on its Unix socket next to TCP).
std::string CollectorSocketPath(std::string* error);

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
