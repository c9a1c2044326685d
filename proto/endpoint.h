// Where a rank finds its collector, shared by both ends so they always agree.
#pragma once
#include <string>

namespace gpuwatch::wire {

// The per-user directory that holds the collector's socket and its start lock:
// $GPUWATCH_SOCKET_DIR, else /tmp/gpuwatch-<uid>. Created 0700 if missing. Returns "" and
// sets `error` if it exists but is not a directory owned by this user with mode 0700.
std::string SocketDir(std::string* error);

// $GPUWATCH_COLLECTOR when set (a path, or "unix:PATH"), else SocketDir()/collector.sock.
std::string CollectorSocketPath(std::string* error);

}  // namespace gpuwatch::wire
