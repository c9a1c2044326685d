// The connection to the collector: connect to its Unix socket, and if nobody listens,
// start exactly one collector per host (an flock serialises the ranks that race to do it).
#pragma once
#include <cstddef>
#include <string>

namespace gpuwatch::inject {

class CollectorLink {
 public:
  ~CollectorLink() { Close(); }

  // Connects, starting a collector first when allowed and none answers. Never blocks
  // longer than `budget_ms`. Returns false with error() set.
  bool Connect(bool autostart, const std::string& collector_bin, int budget_ms);

  // Writes as much of data as the socket takes without blocking longer than `wait_ms`.
  // Returns bytes written; sets broken() when the collector is gone.
  size_t Write(const char* data, size_t n, int wait_ms);

  bool connected() const { return fd_ >= 0; }
  bool broken() const { return broken_; }
  const std::string& error() const { return error_; }
  void Close();

 private:
  bool TryConnect(const std::string& path);
  bool SpawnCollector(const std::string& bin, const std::string& path);
  int fd_ = -1;
  bool broken_ = false;
  std::string error_;
};

}  // namespace gpuwatch::inject
