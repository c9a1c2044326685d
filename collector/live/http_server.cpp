#include "live/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <spdlog/spdlog.h>

#include "live/prometheus.h"
#include "live/snapshot.h"

namespace gpuwatch::collector {
namespace {

void WriteAll(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    pollfd p{fd, POLLOUT, 0};
    if (poll(&p, 1, MetricsHttpServer::kClientTimeoutMs) <= 0) return;  // slow reader: give up
    const ssize_t n = send(fd, s.data() + done, s.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

std::string Response(const char* status, const char* type, const std::string& body,
                     bool head) {
  std::string r = std::string("HTTP/1.0 ") + status + "\r\nContent-Type: " + type +
                  "\r\nContent-Length: " + std::to_string(body.size()) +
                  "\r\nConnection: close\r\n\r\n";
  if (!head) r += body;
  return r;
}

}  // namespace

bool ParseListenAddress(const std::string& spec, std::string* host, int* port,
                        std::string* error) {
  std::string h, p;
  if (!spec.empty() && spec[0] == '[') {
    const size_t end = spec.find(']');
    if (end == std::string::npos || end + 1 >= spec.size() || spec[end + 1] != ':') {
      *error = "bad address '" + spec + "': expected [ADDR]:PORT";
      return false;
    }
    h = spec.substr(1, end - 1);
    p = spec.substr(end + 2);
  } else if (const size_t colon = spec.rfind(':'); colon != std::string::npos) {
    h = spec.substr(0, colon);
    p = spec.substr(colon + 1);
  } else {
    p = spec;
  }
  char* end = nullptr;
  errno = 0;
  const long v = p.empty() ? -1 : std::strtol(p.c_str(), &end, 10);
  if (p.empty() || errno || *end || v < 0 || v > 65535) {
    *error = "bad address '" + spec + "': expected ADDR:PORT with PORT in 0..65535";
    return false;
  }
  *host = h.empty() ? "127.0.0.1" : h;  // nothing said: loopback only
  *port = static_cast<int>(v);
  return true;
}

std::unique_ptr<MetricsHttpServer> MetricsHttpServer::Start(const std::string& spec, Body body,
                                                            std::string* error) {
  std::string host;
  int port = 0;
  if (!ParseListenAddress(spec, &host, &port, error)) return nullptr;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res); rc != 0) {
    *error = "metrics address " + spec + ": " + gai_strerror(rc);
    return nullptr;
  }
  std::unique_ptr<MetricsHttpServer> s(new MetricsHttpServer());
  std::string why = "no address";
  for (addrinfo* a = res; a && s->listen_fd_ < 0; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 16) == 0) {
      s->listen_fd_ = fd;
      sockaddr_storage bound{};
      socklen_t len = sizeof bound;
      getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
      char name[INET6_ADDRSTRLEN] = "?";
      if (bound.ss_family == AF_INET6) {
        auto* in6 = reinterpret_cast<sockaddr_in6*>(&bound);
        s->port_ = ntohs(in6->sin6_port);
        inet_ntop(AF_INET6, &in6->sin6_addr, name, sizeof name);
        s->url_ = "http://[" + std::string(name) + "]:" + std::to_string(s->port_) + "/metrics";
      } else {
        auto* in4 = reinterpret_cast<sockaddr_in*>(&bound);
        s->port_ = ntohs(in4->sin_port);
        inet_ntop(AF_INET, &in4->sin_addr, name, sizeof name);
        s->url_ = "http://" + std::string(name) + ":" + std::to_string(s->port_) + "/metrics";
      }
    } else {
      why = std::strerror(errno);
      close(fd);
    }
  }
  freeaddrinfo(res);
  if (s->listen_fd_ < 0) {
    *error = "cannot listen for metrics on " + spec + ": " + why;
    return nullptr;
  }
  if (pipe2(s->stop_pipe_, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    return nullptr;
  }
  s->body_ = std::move(body);
  // The thread takes no signals: SIGINT/SIGTERM belong to whoever waits for them (the
  // collector's signalfd, `gpuwatch run`'s main thread), and would kill us here.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  s->thread_ = std::thread([p = s.get()] { p->Loop(); });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return s;
}

MetricsHttpServer::~MetricsHttpServer() {
  if (thread_.joinable()) {
    const char c = 0;
    if (write(stop_pipe_[1], &c, 1) < 0) {
      // A full pipe already holds a stop request.
    }
    thread_.join();
  }
  for (int fd : {listen_fd_, stop_pipe_[0], stop_pipe_[1]})
    if (fd >= 0) close(fd);
}

void MetricsHttpServer::Loop() {
  for (;;) {
    pollfd p[2] = {{listen_fd_, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      spdlog::warn("metrics server stopped: poll: {}", std::strerror(errno));
      return;
    }
    if (p[1].revents) return;
    if (!(p[0].revents & POLLIN)) continue;
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) continue;
    Serve(fd);
    close(fd);
  }
}

void MetricsHttpServer::Serve(int fd) {
  // Read the request head: up to kMaxRequestBytes, within kClientTimeoutMs in all.
  std::string req;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kClientTimeoutMs);
  while (req.find("\r\n\r\n") == std::string::npos && req.find("\n\n") == std::string::npos) {
    if (req.size() >= kMaxRequestBytes) {
      WriteAll(fd, Response("431 Request Header Fields Too Large", "text/plain",
                            "request too large\n", false));
      return;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now()).count();
    pollfd p{fd, POLLIN, 0};
    if (left <= 0 || poll(&p, 1, static_cast<int>(left)) <= 0) return;  // too slow: dropped
    char buf[1024];
    const ssize_t n = recv(fd, buf, std::min(sizeof buf, kMaxRequestBytes - req.size()), 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return;
    req.append(buf, static_cast<size_t>(n));
  }
  // Request line: METHOD SP PATH SP VERSION.
  const std::string line = req.substr(0, req.find_first_of("\r\n"));
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp1 == std::string::npos || sp2 == std::string::npos) {
    WriteAll(fd, Response("400 Bad Request", "text/plain", "bad request\n", false));
    return;
  }
  const std::string method = line.substr(0, sp1);
  std::string path = line.substr(sp1 + 1, sp2 - sp1 - 1);
  path = path.substr(0, path.find('?'));
  const bool head = method == "HEAD";
  if (method != "GET" && !head) {
    WriteAll(fd, Response("405 Method Not Allowed", "text/plain", "only GET\n", false));
    return;
  }
  if (path != "/metrics") {
    WriteAll(fd, Response("404 Not Found", "text/plain", "gpuwatch serves /metrics only\n", head));
    return;
  }
  WriteAll(fd, Response("200 OK", kPrometheusContentType, body_(), head));
}

std::unique_ptr<MetricsHttpServer> ServeMetrics(const std::string& spec, const LiveFeed& feed,
                                                std::string* error) {
  return MetricsHttpServer::Start(
      spec,
      [&feed] {
        const auto snap = feed.Latest();
        return FormatPrometheus(snap ? *snap : LiveSnapshot{});
      },
      error);
}

}  // namespace gpuwatch::collector
