// One client connection's protocol state, independent of sockets: bytes in, frames out to
// the rank it attached to (rank_sink.h). Enforces the handshake (first frame is a Hello of our protocol version)
// and turns any framing or decoding error into a single reason to drop the client.
// A connection may instead open with a ClockProbe: a host collector measuring this
// collector's clock (--upstream); it is answered and never feeds a job.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "frame.h"
#include "ingest/journal_store.h"
#include "ingest/rank_sink.h"

namespace gpuwatch::collector {

// Where a connection's accepted frames also go (a host collector's --upstream link).
class FrameSink {
 public:
  virtual ~FrameSink() = default;
  // A frame this collector accepted, as the rank sent it (on the rank's clock): decoded,
  // and its bytes. The first one is the Hello.
  virtual void OnFrame(const wire::Frame& frame, std::string_view raw) = 0;
  // The connection closed; nothing more comes.
  virtual void OnClose() = 0;
};

class Connection {
 public:
  // With `journal` enabled, every frame accepted is appended to its rank's journal.
  Connection(int peer_pid, RankDirectory& jobs, Clock::time_point now,
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

  // A connection of the running collector (not a replay of a journal): each rank's Goodbye
  // notes the collector's CPU time so far, shared among the ranks it served
  // (RankSink::NoteCollectorCpu); not for a rank another collector forwards.
  void MeasureCollectorCpu() { measure_cpu_ = true; }

  // Every frame accepted from now on also goes to `sink` (--upstream).
  void ForwardTo(std::unique_ptr<FrameSink> sink) { sink_ = std::move(sink); }

  // Bytes that arrived. Returns false when the client must be dropped; error() says why.
  // `scratch` is shared by every connection, so each one does not keep its own.
  // Frames accepted before an error are kept (aggregated and journaled).
  bool OnBytes(std::string_view bytes, wire::FrameScratch& scratch, Clock::time_point now);
  // The socket closed (EOF, error, or we dropped it). Idempotent.
  void Close(Clock::time_point now);

  bool has_hello() const { return rank_ != nullptr; }
  // Said who it is: a Hello, or the first (authenticated) ClockProbe.
  bool identified() const { return rank_ != nullptr || clock_peer_; }
  // Bytes to send back (answers to clock probes); the caller writes them or drops them.
  std::string TakeReplies() {
    std::string r;
    r.swap(replies_);
    return r;
  }
  bool said_goodbye() const { return said_goodbye_; }
  Clock::time_point connected_at() const { return connected_at_; }
  size_t buffered() const { return reader_.buffered(); }
  const std::string& error() const { return error_; }
  // The rank this connection feeds, null before the Hello.
  RankSink* rank() const { return rank_; }
  // Journal troubles since the last call (one line each, for the log).
  std::vector<std::string> TakeNotices();
  // "rank 3 of job abc (pid 1234)" once the Hello arrived, "client pid 1234" before;
  // a TCP peer: "TCP peer ADDR" before, "rank 3 of job abc (pid 1234, TCP ADDR)" after.
  std::string Describe() const;

 private:
  bool OnFrame(wire::Frame& frame, std::string_view raw, Clock::time_point now);
  bool OnHello(wire::Hello hello);
  bool OnClockProbe(const wire::ClockProbe& probe);
  // A TCP peer's first frame (`where`) must carry the job token.
  bool CheckToken(const std::string& token, const char* where);
  void OpenJournal();
  void FlushJournal();
  // The rank's state into the journal when its checkpoint is due (journal_store.h).
  void CheckpointJournal(Clock::time_point now);
  bool Fail(std::string why);
  void NoteCollectorCpu();  // at the rank's Goodbye, or its close without one

  int peer_pid_;
  RankDirectory& jobs_;
  Clock::time_point connected_at_;
  wire::FrameReader reader_;
  std::string job_id_;
  int rank_no_ = -1;
  RankSink* rank_ = nullptr;
  bool said_goodbye_ = false;
  bool closed_ = false;
  bool measure_cpu_ = false;
  std::string error_;
  const JournalOptions* journal_opt_;
  std::vector<std::string> notices_;
  const std::string* token_ = nullptr;  // set: a TCP peer
  std::string tcp_address_;
  // Hello.clock_offset_ns: added to every time of this rank's frames (clock/clock_shift.h).
  int64_t clock_shift_ = 0;
  std::unique_ptr<FrameSink> sink_;
  bool clock_peer_ = false;  // opened with a ClockProbe
  std::string clock_peer_host_;
  std::string replies_;
};

// Clips the strings of a Hello to sane lengths (they end up in logs, JSON and terminals).
void SanitizeHello(wire::Hello& hello);

}  // namespace gpuwatch::collector
