// One client connection's protocol state, independent of sockets: bytes in, frames out to
// the JobTable. Enforces the handshake (first frame is a Hello of our protocol version)
// and turns any framing or decoding error into a single reason to drop the client.
#pragma once
#include <string>
#include <string_view>

#include "aggregate/job.h"
#include "frame.h"
#include "store/journal_store.h"

namespace gpuwatch::collector {

class Connection {
 public:
  // With `journal` enabled, every frame accepted is appended to its rank's journal.
  Connection(int peer_pid, JobTable& jobs, Clock::time_point now,
             const JournalOptions* journal = nullptr)
      : peer_pid_(peer_pid), jobs_(jobs), connected_at_(now), journal_opt_(journal) {}
  ~Connection() { Close(Clock::now()); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // A TCP peer (no kernel credentials): its Hello must carry `*token` or the connection
  // fails before anything is attached; `address` names it in the log.
  void RequireToken(const std::string* token, std::string address) {
    token_ = token;
    tcp_address_ = std::move(address);
  }

  // Bytes that arrived. Returns false when the client must be dropped; error() says why.
  // `scratch` is a Frame reused across connections so each one does not keep its own.
  // Frames accepted before an error are kept (aggregated and journaled).
  bool OnBytes(std::string_view bytes, wire::Frame& scratch, Clock::time_point now);
  // The socket closed (EOF, error, or we dropped it). Idempotent.
  void Close(Clock::time_point now);

  bool has_hello() const { return rank_ != nullptr; }
  bool said_goodbye() const { return said_goodbye_; }
  Clock::time_point connected_at() const { return connected_at_; }
  size_t buffered() const { return reader_.buffered(); }
  const std::string& error() const { return error_; }
  // The rank this connection feeds, null before the Hello.
  RankAggregate* rank() const { return rank_; }
  // Journal troubles since the last call (one line each, for the log).
  std::vector<std::string> TakeNotices();
  // "rank 3 of job abc (pid 1234)" once the Hello arrived, "client pid 1234" before;
  // a TCP peer: "TCP peer ADDR" before, "rank 3 of job abc (pid 1234, TCP ADDR)" after.
  std::string Describe() const;

 private:
  bool OnFrame(const wire::Frame& frame, std::string_view raw, Clock::time_point now);
  bool OnHello(wire::Hello hello);
  void OpenJournal();
  void FlushJournal();
  bool Fail(std::string why);

  int peer_pid_;
  JobTable& jobs_;
  Clock::time_point connected_at_;
  wire::FrameReader reader_;
  std::string job_id_;
  int rank_no_ = -1;
  RankAggregate* rank_ = nullptr;
  bool said_goodbye_ = false;
  bool closed_ = false;
  std::string error_;
  const JournalOptions* journal_opt_;
  std::vector<std::string> notices_;
  const std::string* token_ = nullptr;  // set: a TCP peer
  std::string tcp_address_;
};

// Clips the strings of a Hello to sane lengths (they end up in logs, JSON and terminals).
void SanitizeHello(wire::Hello& hello);

}  // namespace gpuwatch::collector
