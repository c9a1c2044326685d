// See trace_stream.h.
#include "trace/trace_stream.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/out_dir.h"

namespace gpuwatch::collector {
namespace {

// Flushed early when this much is buffered, so a huge batch does not hold much memory.
constexpr size_t kFlushAt = 1 << 20;

}  // namespace

void FramePacket(size_t size, std::string* out) {
  out->push_back(0x0A);  // Trace.packet, length-delimited
  uint64_t v = size;
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

std::unique_ptr<TraceStream> TraceStream::Create(const std::string& path, std::string* error) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    *error = ErrnoWhy("cannot create", path);
    return nullptr;
  }
  return std::unique_ptr<TraceStream>(new TraceStream(path, fd));
}

TraceStream::~TraceStream() {
  Flush();
  if (fd_ >= 0) ::close(fd_);
}

void TraceStream::Append(std::string_view packet) {
  if (fd_ < 0) return;
  FramePacket(packet.size(), &buf_);
  buf_.append(packet);
  ++packets_;
  if (buf_.size() >= kFlushAt) Flush();
}

void TraceStream::AppendFramed(std::string_view packets) {
  if (fd_ >= 0) buf_.append(packets);
}

void TraceStream::Flush() {
  if (fd_ >= 0 && !buf_.empty()) {
    if (WriteAll(fd_, buf_.data(), buf_.size())) {
      written_ += buf_.size();
    } else {
      // A partial packet may be on disk: the viewer ignores it; write nothing after it.
      error_ = ErrnoWhy("write", path_);
      ::close(fd_);
      fd_ = -1;
    }
  }
  buf_.clear();
}

bool ConcatenateTrace(const std::vector<std::string>& parts, std::string_view tail, const std::string& out,
                      std::string* error) {
  const std::string tmp = out + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    *error = ErrnoWhy("cannot create", tmp);
    return false;
  }
  std::string chunk(1 << 20, '\0');
  bool ok = true;
  for (const std::string& part : parts) {
    const int in = ::open(part.c_str(), O_RDONLY | O_CLOEXEC);
    if (in < 0) {
      *error = ErrnoWhy("cannot read", part);
      ok = false;
      break;
    }
    ssize_t n;
    while ((n = ::read(in, chunk.data(), chunk.size())) != 0) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 || !WriteAll(fd, chunk.data(), static_cast<size_t>(n))) {
        *error = n < 0 ? ErrnoWhy("read", part) : ErrnoWhy("write", tmp);
        ok = false;
        break;
      }
    }
    ::close(in);
    if (!ok) break;
  }
  if (ok && !WriteAll(fd, tail.data(), tail.size())) {
    *error = ErrnoWhy("write", tmp);
    ok = false;
  }
  ::close(fd);
  if (ok && std::rename(tmp.c_str(), out.c_str()) != 0) {
    *error = ErrnoWhy("rename", tmp);
    ok = false;
  }
  if (!ok) ::unlink(tmp.c_str());
  return ok;
}

}  // namespace gpuwatch::collector
