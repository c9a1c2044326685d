// One file of whole Perfetto packets (the whole trace, its summary stream, or one detail
// segment): each packet framed as Trace.packet (tag 0x0A, varint length, TracePacket bytes),
// buffered and written whole, so the file is a valid trace up to its last complete packet
// whatever happens to the collector. A write error closes it and keeps the reason.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gpuwatch::collector {

class TraceStream {
 public:
  // Creates (truncates) `path`. Null with `error` on failure.
  static std::unique_ptr<TraceStream> Create(const std::string& path, std::string* error);
  ~TraceStream();
  TraceStream(const TraceStream&) = delete;
  TraceStream& operator=(const TraceStream&) = delete;

  // Buffers one packet (its TracePacket bytes; the framing is added here).
  void Append(std::string_view packet);
  // Buffers packets already framed.
  void AppendFramed(std::string_view packets);
  // Writes the buffered packets. A write error closes the file: nothing more is written.
  void Flush();

  bool ok() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }
  uint64_t bytes() const { return written_ + buf_.size(); }
  uint64_t packets() const { return packets_; }
  const std::string& error() const { return error_; }

 private:
  TraceStream(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}

  std::string path_;
  int fd_ = -1;
  std::string buf_;
  uint64_t written_ = 0, packets_ = 0;
  std::string error_;
};

// Writes `parts` (files of whole packets, in this order) and then `tail` (packet bytes,
// framed) into `out`, through a temporary name and a rename, so a reader sees the old file
// or the whole new one. Concatenated packet files are one trace. False with `error`.
bool ConcatenateTrace(const std::vector<std::string>& parts, std::string_view tail, const std::string& out,
                      std::string* error);

// Appends the framing of one packet of `size` bytes (tag and varint length) to `out`.
void FramePacket(size_t size, std::string* out);

}  // namespace gpuwatch::collector
