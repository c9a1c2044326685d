// A trace file as a byte stream: plain or gzip (zlib tells them apart by the magic bytes),
// read in fixed chunks so a file of gigabytes never sits in memory. A read error or a gzip
// stream cut short ends the stream early and says why (error()).
#pragma once
#include <zlib.h>

#include <istream>
#include <memory>
#include <streambuf>
#include <string>
#include <vector>

namespace gpuwatch::collector {

class TraceSource : public std::streambuf {
 public:
  TraceSource() = default;
  ~TraceSource() override;
  TraceSource(const TraceSource&) = delete;
  TraceSource& operator=(const TraceSource&) = delete;

  // False with `error` when the file cannot be opened.
  bool Open(const std::string& path, std::string* error);
  // Why the stream ended before the file did ("" when it ended with the file).
  const std::string& error() const { return error_; }
  bool gzip() const { return gzip_; }
  uint64_t bytes_read() const { return bytes_read_; }  // uncompressed

 protected:
  int_type underflow() override;

 private:
  gzFile file_ = nullptr;
  std::vector<char> buf_;
  std::string path_, error_;
  bool gzip_ = false;
  uint64_t bytes_read_ = 0;
};

}  // namespace gpuwatch::collector
