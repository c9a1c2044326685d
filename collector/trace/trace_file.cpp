#include "trace/trace_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "perfetto_trace.pb.h"

namespace gpuwatch::collector {
namespace {

// Flushed early when this much is buffered, so a huge batch does not hold much memory.
constexpr size_t kFlushAt = 1 << 20;

void PutVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

}  // namespace

bool ParseTraceLevel(const std::string& s, TraceLevel* level) {
  if (s == "off" || s == "0") *level = TraceLevel::kOff;
  else if (s == "summary") *level = TraceLevel::kSummary;
  else if (s == "full" || s == "1") *level = TraceLevel::kFull;
  else return false;
  return true;
}

const char* TraceLevelName(TraceLevel level) {
  switch (level) {
    case TraceLevel::kOff: return "off";
    case TraceLevel::kSummary: return "summary";
    case TraceLevel::kFull: return "full";
  }
  return "?";
}

bool ParseTraceWindow(const std::string& s, TraceOptions* options) {
  const size_t colon = s.find(':');
  if (colon == std::string::npos) return false;
  char* end = nullptr;
  const std::string a = s.substr(0, colon), b = s.substr(colon + 1);
  const double from = std::strtod(a.c_str(), &end);
  if (a.empty() || *end != '\0') return false;
  const double to = std::strtod(b.c_str(), &end);
  if (b.empty() || *end != '\0' || !(from >= 0) || !(to > from) || to > 1e9) return false;
  options->window_from_s = from;
  options->window_to_s = to;
  return true;
}

bool TraceOptionsFromEnv(TraceOptions* options, std::string* error) {
  bool ok = true;
  if (const char* v = std::getenv("GPUWATCH_TRACE_WINDOW"); v && *v) {
    if (!ParseTraceWindow(v, options)) {
      *error = std::string("GPUWATCH_TRACE_WINDOW=") + v + ": expected FROM:TO in seconds";
      ok = false;
    }
  }
  if (const char* v = std::getenv("GPUWATCH_TRACE"); v && *v) {
    if (!ParseTraceLevel(v, &options->level)) {
      *error = std::string("GPUWATCH_TRACE=") + v + ": expected off, summary or full";
      ok = false;
    }
  }
  if (const char* v = std::getenv("GPUWATCH_TRACE_MAX_MIB"); v && *v) {
    char* end = nullptr;
    const unsigned long long mib = std::strtoull(v, &end, 10);
    if (end == v || *end != '\0' || mib == 0 || mib > (1ull << 30)) {
      *error = std::string("GPUWATCH_TRACE_MAX_MIB=") + v + ": expected a positive number of MiB";
      ok = false;
    } else {
      options->max_bytes = static_cast<uint64_t>(mib) << 20;
    }
  }
  return ok;
}

std::unique_ptr<TraceFile> TraceFile::Open(const std::string& path, const TraceOptions& options,
                                           std::string* error) {
  std::error_code ec;
  const auto dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    *error = "cannot create " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  return std::unique_ptr<TraceFile>(new TraceFile(path, fd, options));
}

TraceFile::TraceFile(std::string path, int fd, TraceOptions options)
    : path_(std::move(path)), fd_(fd), opt_(options) {}

TraceFile::~TraceFile() {
  Flush();
  if (fd_ >= 0) ::close(fd_);
}

void TraceFile::Append(const perfetto::protos::TracePacket& packet, size_t reserve_after) {
  if (level() == TraceLevel::kOff) {
    ++dropped_;
    return;
  }
  scratch_.clear();
  packet.AppendToString(&scratch_);
  AppendEncoded(scratch_, reserve_after);
}

void TraceFile::AppendEncoded(std::string_view packet, size_t reserve_after) {
  if (level() == TraceLevel::kOff) {
    ++dropped_;
    return;
  }
  if (bytes() + packet.size() + 6 + reserve_after > hard_max()) {  // the hard stop is never passed
    ++dropped_;
    stopped_ = true;
    return;
  }
  buf_.push_back(0x0A);  // Trace.packet, length-delimited
  PutVarint(packet.size(), &buf_);
  buf_.append(packet);
  ++packets_;
  if (buf_.size() >= kFlushAt) Flush();
}

void TraceFile::Flush() {
  size_t off = 0;
  while (fd_ >= 0 && off < buf_.size()) {
    const ssize_t n = ::write(fd_, buf_.data() + off, buf_.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // A partial packet may be on disk: the viewer ignores it; write nothing after it.
      error_ = "write " + path_ + ": " + std::strerror(n < 0 ? errno : ENOSPC);
      ::close(fd_);
      fd_ = -1;
      break;
    }
    off += static_cast<size_t>(n);
    written_ += static_cast<uint64_t>(n);
  }
  buf_.clear();
}

}  // namespace gpuwatch::collector
