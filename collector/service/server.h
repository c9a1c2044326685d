// The collector's event loop: one thread, one epoll set holding the listening socket, a
// signalfd for SIGINT/SIGTERM, and every client connection (non-blocking). It moves bytes
// into Connections, and asks the JobTable which jobs have ended; `on_job_end` turns those
// into summaries. No client can block another: reads are bounded per wakeup, a client
// that never says Hello is dropped after a timeout, and total buffered bytes are capped.
#pragma once
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "endpoint.h"
#include "ingest/connection.h"
#include "ingest/journal_store.h"
#include "ingest/upstream.h"
#include "jobs/job_table.h"

namespace gpuwatch::collector {

struct ServerOptions {
  std::string listen_path;
  bool autostart = false;
  std::chrono::milliseconds linger{500};
  std::chrono::milliseconds hello_timeout{30000};
  // --autostart: exit when nobody connected within this time of start.
  std::chrono::milliseconds idle_exit{30000};
  size_t max_connections = 4096;
  // Sum of partial frames held for all clients; past it the client that pushed it over is
  // dropped. Together with the 16 MiB frame limit this bounds ingest memory.
  size_t max_buffered_bytes = size_t{1} << 30;
  // Per-rank journals of accepted frames (store/journal_store.h).
  JournalOptions journal;
  // false: leave SIGINT/SIGTERM alone (`gpuwatch run` handles them on its main thread and
  // stops the server with RequestStop()).
  bool handle_signals = true;
  // Called on the server's thread about every `tick_interval`, or less often when a call
  // costs more than 1/20 of that (and once more after the last summary is written): the
  // only safe moment for live views to read the JobTable.
  std::function<void(const JobTable&, Clock::time_point)> on_tick;
  std::chrono::milliseconds tick_interval{500};
  // --listen-tcp: also listen on TCP there (only when set). Every TCP peer's Hello must
  // carry `token`; Start() refuses TCP without one.
  std::optional<wire::HostPort> listen_tcp;
  std::string token;
  // --upstream: also forward every rank to this root collector (ingest/upstream.h).
  std::optional<UpstreamOptions> upstream;
};

class Server {
 public:
  using JobEnd = std::function<void(Job&)>;
  Server(ServerOptions options, JobTable& jobs, JobEnd on_job_end);
  ~Server();

  // Claims the socket and sets up epoll and signals. False with `error` on failure.
  bool Start(std::string* error);
  // Serves until SIGINT/SIGTERM or, with autostart, until there is nothing left to do.
  // Every job with unwritten data has gone through on_job_end when it returns.
  void Run();
  // From any thread: Run() stops as if SIGINT had arrived (summaries written, then return).
  void RequestStop();
  // Connections now open (any thread; updated by the server thread).
  size_t clients() const { return client_count_.load(std::memory_order_relaxed); }
  // The TCP address actually bound ("127.0.0.1:41234"), "" without TCP.
  const std::string& tcp_address() const { return tcp_address_; }

 private:
  struct Client {
    int fd;
    std::unique_ptr<Connection> conn;
    size_t held = 0;  // conn->buffered() as last counted into buffered_
  };
  // Takes every pending connection of `listen_fd` (the Unix or the TCP socket).
  void Accept(int listen_fd, Clock::time_point now);
  bool AddClient(int fd, std::unique_ptr<Connection> conn, Clock::time_point now);
  // Reads at most `max_chunks` chunks, so one busy client cannot starve the others.
  void Read(int fd, int max_chunks, Clock::time_point now);
  void Drop(int fd, const std::string& why, Clock::time_point now);
  void CloseClient(int fd, Clock::time_point now);
  void DropSilentClients(Clock::time_point now);
  void FinishDueJobs(Clock::time_point now);
  bool ShouldExit(Clock::time_point now) const;
  int TimeoutMs(Clock::time_point now) const;
  void LogNotices(Connection& conn);
  void SendReplies(int fd, Connection& conn);

  ServerOptions opt_;
  JobTable& jobs_;
  JobEnd on_job_end_;
  int listen_fd_ = -1;
  int tcp_fd_ = -1;
  std::string tcp_address_;
  std::unique_ptr<Upstream> upstream_;
  int epoll_fd_ = -1;
  int signal_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: RequestStop()
  std::atomic<size_t> client_count_{0};
  Clock::time_point next_tick_{};
  bool stop_ = false;
  bool served_any_ = false;
  Clock::time_point started_{};
  Clock::time_point last_activity_{};  // last connect or close
  std::unordered_map<int, Client> clients_;
  size_t buffered_ = 0;  // sum of Client::held
  wire::FrameScratch scratch_;
};

}  // namespace gpuwatch::collector
