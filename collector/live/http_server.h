// The smallest HTTP/1.0 server that Prometheus can scrape: GET /metrics only, one
// connection at a time on its own thread, bounded request size and time. It reads a
// LiveFeed, never the JobTable, so a slow or hostile client can delay other scrapes but
// never the ingest.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace gpuwatch::collector {

// "ADDR:PORT", ":PORT" or "PORT" (loopback), "[v6addr]:PORT". False with a one-line error.
bool ParseListenAddress(const std::string& spec, std::string* host, int* port, std::string* error);

class MetricsHttpServer {
 public:
  using Body = std::function<std::string()>;  // called on the server's thread per scrape

  static constexpr size_t kMaxRequestBytes = 8192;
  static constexpr int kClientTimeoutMs = 2000;

  // Binds and starts serving; null with `error` when the address is bad or taken.
  static std::unique_ptr<MetricsHttpServer> Start(const std::string& spec, Body body,
                                                  std::string* error);
  ~MetricsHttpServer();  // stops the thread and closes the socket

  int port() const { return port_; }
  // "http://127.0.0.1:9400/metrics", for the log.
  const std::string& url() const { return url_; }

 private:
  MetricsHttpServer() = default;
  void Loop();
  void Serve(int fd);

  Body body_;
  int listen_fd_ = -1;
  int stop_pipe_[2] = {-1, -1};
  int port_ = 0;
  std::string url_;
  std::thread thread_;
};

class LiveFeed;
// GET /metrics answers FormatPrometheus of `feed`'s latest snapshot (which must outlive
// the server). Null with `error` when the address is bad or taken.
std::unique_ptr<MetricsHttpServer> ServeMetrics(const std::string& spec, const LiveFeed& feed,
                                                std::string* error);

}  // namespace gpuwatch::collector
