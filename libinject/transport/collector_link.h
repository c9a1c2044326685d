// The connection to the collector: the socket GPUWATCH_COLLECTOR names, else the host's
// collector on the default socket, else the job's own (one per job id, started by the
// first process of the job that finds none; an flock serialises the processes that race
// to do it); or, with GPUWATCH_COLLECTOR=tcp://HOST:PORT, a collector elsewhere over TCP
// (never started here).
#pragma once
#include <cstddef>
#include <string>

#include "record/own_fd.h"

namespace gpuwatch::inject {

class CollectorLink {
 public:
  ~CollectorLink() { Close(); }

  // Connects, starting a collector first when allowed and none answers. Never blocks
  // longer than `budget_ms`. Returns false with error() set. Over TCP the Hello carries the
  // job token (GPUWATCH_TOKEN).
  bool Connect(bool autostart, const std::string& collector_bin, int budget_ms);

  // Writes as much of data as the socket takes without blocking longer than `wait_ms`.
  // Returns bytes written; sets broken() when the collector is gone, or when the job closed
  // the socket (its descriptor checked first: the number may be the job's own socket now).
  size_t Write(const char* data, size_t n, int wait_ms);

  // Bytes written that the collector has not read yet (the socket's send queue); 0 when not
  // connected. At exit, how the library tells a collector that reads from one that does not.
  size_t Unread() const;

  bool connected() const { return fd_.held(); }
  // The token the Hello must carry on this connection: GPUWATCH_TOKEN over TCP, else "".
  const std::string& token() const { return token_; }
  bool broken() const { return broken_; }
  const std::string& error() const { return error_; }
  // Closes the socket if it is still ours (never a descriptor the job took over).
  void Close();

 private:
  bool TryConnect(const std::string& path);
  bool ConnectTcp(const std::string& address, int budget_ms);
  bool SpawnCollector(const std::string& bin, const std::string& path, const std::string& log);
  OwnFd fd_;
  bool broken_ = false;
  std::string error_;
  std::string token_;
};

}  // namespace gpuwatch::inject
