#include "ingest/journal_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "journal.h"  // proto/journal.h: the shared file layout
#include "common/out_dir.h"

namespace gpuwatch::collector {
namespace {

std::string Errno(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

}  // namespace

std::unique_ptr<JournalWriter> JournalWriter::Open(const std::string& out_dir, int rank,
                                                   int pid, uint64_t max_bytes,
                                                   std::string* error) {
  const std::string dir = out_dir + "/" + wire::kJournalDir;
  if (!MakeDirs(dir, error, 0700)) return nullptr;
  std::unique_ptr<JournalWriter> w(new JournalWriter());
  w->max_bytes_ = max_bytes;
  const std::string base = wire::JournalFileName(rank, pid);
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string name = base;
    if (attempt > 0)
      name = base.substr(0, base.size() - 7) + "." + std::to_string(attempt) + ".frames";
    const std::string path = dir + "/" + name;
    const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
      *error = Errno("cannot open journal", path);
      return nullptr;
    }
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      *error = "journal " + path + " is not a regular file";
      close(fd);
      return nullptr;
    }
    uint64_t end = 0;
    uint32_t flags = 0;
    if (st.st_size == 0) {
      unsigned char header[wire::kJournalHeaderBytes];
      wire::EncodeJournalHeader(header, 0);
      if (!WriteAll(fd, reinterpret_cast<const char*>(header), sizeof header)) {
        *error = Errno("cannot write journal", path);
        close(fd);
        return nullptr;
      }
      end = sizeof header;
    } else {
      // A journal of this rank and pid from before (the collector restarted): continue it
      // if it is one, after cutting off a frame a killed writer left half written.
      FrameFileInfo info;
      ScanFrameFile(path, [](const wire::Frame&, std::string_view) {}, &info);
      if (info.valid_end < wire::kJournalHeaderBytes) {
        close(fd);
        continue;  // not ours: leave it alone, take the next name
      }
      if (info.valid_end < info.bytes && ftruncate(fd, static_cast<off_t>(info.valid_end)) != 0) {
        *error = Errno("cannot repair journal", path);
        close(fd);
        return nullptr;
      }
      end = info.valid_end;
      flags = info.flags;
    }
    if (lseek(fd, static_cast<off_t>(end), SEEK_SET) < 0) {
      *error = Errno("cannot seek in journal", path);
      close(fd);
      return nullptr;
    }
    w->fd_ = fd;
    w->path_ = path;
    w->status_.file = std::string(wire::kJournalDir) + "/" + name;
    w->status_.bytes = end;
    w->status_.capped = (flags & wire::kJournalCapped) != 0;
    return w;
  }
  *error = "no free journal name for " + base + " in " + dir;
  return nullptr;
}

JournalWriter::~JournalWriter() {
  Flush();
  if (fd_ >= 0) close(fd_);
}

void JournalWriter::Stop(std::string why) {
  if (status_.error.empty() && !status_.capped) notice_ = "journal " + path_ + ": " + why;
  status_.error = std::move(why);
  pending_.clear();
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

bool JournalWriter::Add(std::string_view raw) {
  if (fd_ < 0 || status_.capped) return false;
  if (status_.bytes + pending_.size() + raw.size() > max_bytes_) {
    // Mark the file itself, so a rebuild from it knows it is incomplete.
    unsigned char flags[4];
    wire::PutU32(flags, wire::kJournalCapped);
    if (!Flush()) return false;
    if (pwrite(fd_, flags, sizeof flags, wire::kJournalFlagsOffset) != sizeof flags) {
      Stop(Errno("cannot mark as capped", path_));
      return false;
    }
    status_.capped = true;
    notice_ = "journal " + path_ + " reached its cap of " + std::to_string(max_bytes_) +
              " bytes: later frames of this rank are in the summary only";
    return false;
  }
  pending_.append(raw);
  return true;
}

bool JournalWriter::Flush() {
  if (fd_ < 0) return false;
  if (pending_.empty()) return true;
  if (!WriteAll(fd_, pending_.data(), pending_.size())) {
    Stop(std::string("write failed (") + std::strerror(errno) + "); journaling stopped");
    return false;
  }
  status_.bytes += pending_.size();
  pending_.clear();
  return true;
}

std::string JournalWriter::TakeNotice() {
  std::string n;
  n.swap(notice_);
  return n;
}

bool ScanFrameFile(const std::string& path,
                   const std::function<void(const wire::Frame&, std::string_view)>& on_frame,
                   FrameFileInfo* info) {
  *info = FrameFileInfo{};
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    info->error = Errno("cannot open", path);
    return false;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    info->error = path + " is not a regular file";
    close(fd);
    return false;
  }
  info->bytes = static_cast<uint64_t>(st.st_size);
  unsigned char header[wire::kJournalHeaderBytes];
  uint32_t version = 0;
  if (pread(fd, header, sizeof header, 0) != static_cast<ssize_t>(sizeof header) ||
      !wire::DecodeJournalHeader(header, &version, &info->flags)) {
    info->error = path + " is not a gpuwatch frame file (bad header or version)";
    close(fd);
    return false;
  }
  uint64_t offset = sizeof header;
  info->valid_end = offset;
  wire::FrameReader reader;
  wire::Frame frame;
  std::string chunk(1 << 20, '\0');
  bool ok = true;
  for (bool eof = false; !eof && ok;) {
    const ssize_t n = pread(fd, chunk.data(), chunk.size(), static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      info->error = Errno("cannot read", path);
      ok = false;
      break;
    }
    eof = n == 0;
    offset += static_cast<uint64_t>(n);
    reader.Feed(std::string_view(chunk.data(), static_cast<size_t>(n)));
    for (;;) {
      const auto s = reader.Next(frame);
      if (s == wire::FrameReader::Status::kNeedMore) break;
      if (s == wire::FrameReader::Status::kError) {
        info->error = path + ": frame " + std::to_string(info->frames + 1) + " at offset " +
                      std::to_string(info->valid_end) + ": " + reader.error() +
                      "; the rest of the file is ignored";
        ok = false;
        break;
      }
      const std::string_view raw = reader.last_raw();
      info->valid_end += raw.size();
      ++info->frames;
      on_frame(frame, raw);
    }
  }
  close(fd);
  if (ok) info->truncated_tail = info->bytes - info->valid_end;
  return ok;
}

}  // namespace gpuwatch::collector
