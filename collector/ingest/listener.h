// The collector's Unix socket: claiming the path (refusing when another collector answers,
// replacing a stale socket left by a dead one) and checking who connects (SO_PEERCRED).
#pragma once
#include <sys/types.h>

#include <string>

namespace gpuwatch::collector {

// Binds and listens on `path` (non-blocking, close-on-exec, mode 0600). Returns the fd, or
// -1 with `error` set to one line: another collector is listening, the path is not a
// socket, the path is too long, or a system call failed.
int ListenUnix(const std::string& path, std::string* error);

struct Peer {
  pid_t pid = 0;
  uid_t uid = 0;
};
// The credentials the kernel recorded when the peer connected.
bool PeerOf(int fd, Peer* peer);
// Only processes of the user running the collector may talk to it.
inline bool PeerAllowed(const Peer& peer, uid_t own_uid) { return peer.uid == own_uid; }

}  // namespace gpuwatch::collector
