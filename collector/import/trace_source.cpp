// See trace_source.h.
#include "import/trace_source.h"

#include <cerrno>
#include <cstring>

namespace gpuwatch::collector {
namespace {
constexpr size_t kChunkBytes = 1 << 18;
}  // namespace

TraceSource::~TraceSource() {
  if (file_) gzclose(file_);
}

bool TraceSource::Open(const std::string& path, std::string* error) {
  path_ = path;
  errno = 0;
  file_ = gzopen(path.c_str(), "rb");
  if (!file_) {
    *error = "cannot open " + path + ": " + (errno ? std::strerror(errno) : "out of memory");
    return false;
  }
  gzbuffer(file_, kChunkBytes);
  buf_.resize(kChunkBytes);
  setg(buf_.data(), buf_.data(), buf_.data());
  return true;
}

TraceSource::int_type TraceSource::underflow() {
  if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
  if (!file_ || !error_.empty()) return traits_type::eof();
  const int n = gzread(file_, buf_.data(), static_cast<unsigned>(buf_.size()));
  gzip_ = gzip_ || gzdirect(file_) == 0;
  int code = Z_OK;
  const char* msg = gzerror(file_, &code);
  if (n < 0 || (code != Z_OK && code != Z_STREAM_END)) {
    // zlib says Z_BUF_ERROR for a gzip stream that ends without its trailer: a cut-off file.
    error_ = code == Z_BUF_ERROR ? "truncated gzip (the file ends inside the compressed stream)"
                                 : std::string("cannot read: ") + (code == Z_ERRNO ? std::strerror(errno) : msg);
    if (n <= 0) return traits_type::eof();
  }
  if (n <= 0) return traits_type::eof();
  bytes_read_ += static_cast<uint64_t>(n);
  setg(buf_.data(), buf_.data(), buf_.data() + n);
  return traits_type::to_int_type(*gptr());
}

}  // namespace gpuwatch::collector
