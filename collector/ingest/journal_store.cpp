#include "ingest/journal_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include <cerrno>
#include <cstdlib>
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
  w->dir_ = dir;
  w->rank_ = rank;
  w->pid_ = pid;
  // A checkpoint already there: the frames after it are in its next part and later ones.
  int first = 0;
  if (struct stat cst {}; stat((dir + "/" + wire::CheckpointFileName(rank, pid)).c_str(), &cst) == 0) {
    w->inherited_checkpoint_ = true;
    JournalCheckpoint c;
    std::string ignored;
    if (ReadCheckpointFile(dir + "/" + wire::CheckpointFileName(rank, pid), &c, &ignored)) first = c.next_part;
  }
  for (int part = first; part < first + 100; ++part) {
    const std::string name = wire::JournalPartFileName(rank, pid, part);
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
    w->part_ = w->first_part_ = part;
    w->status_.file = std::string(wire::kJournalDir) + "/" + name;
    w->status_.bytes = end;
    w->status_.capped = (flags & wire::kJournalCapped) != 0;
    return w;
  }
  *error = "no free journal name for " + wire::JournalFileName(rank, pid) + " in " + dir;
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

std::string JournalWriter::PartPath(int part) const {
  return dir_ + "/" + wire::JournalPartFileName(rank_, pid_, part);
}

void JournalWriter::set_checkpoint_interval(double seconds, uint64_t checkpoints_before,
                                            std::chrono::steady_clock::time_point now) {
  checkpoint_every_ = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(seconds > 0 ? seconds : 0));
  next_checkpoint_ = now + checkpoint_every_;
  // The checkpoint there is this collector's own (the rank reconnected): carry on with it.
  if (checkpoints_before > 0) inherited_checkpoint_ = false;
  status_.checkpoints = checkpoints_before;
}

bool JournalWriter::CheckpointDue(std::chrono::steady_clock::time_point now) const {
  if (fd_ < 0 || checkpoint_every_.count() == 0 || inherited_checkpoint_ || !status_.checkpoint_error.empty())
    return false;
  return now >= next_checkpoint_ || status_.capped || status_.bytes > max_bytes_ / 2;
}

void JournalWriter::StopCheckpoints(std::string why) {
  status_.checkpoint_error = why;
  notice_ = "journal " + path_ + ": no more checkpoints: " + why + "; frames are journaled up to the cap as before";
}

bool JournalWriter::WriteCheckpoint(std::string_view state, uint64_t max_batch_seq,
                                    std::chrono::steady_clock::time_point now,
                                    std::chrono::steady_clock::time_point encode_started) {
  if (!CheckpointDue(now)) return false;
  next_checkpoint_ = now + checkpoint_every_;
  // A rank sent as figures has no state of its own to keep; a part must open with a Hello.
  if (state.empty() || hello_.empty()) return false;
  if (!Flush()) return false;
  // The next part first, opening with the Hello: once the checkpoint names it, it exists.
  const int next = part_ + 1;
  const std::string next_path = PartPath(next);
  const int fd = open(next_path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    StopCheckpoints(Errno("cannot create", next_path));
    return false;
  }
  std::string opening(wire::kJournalHeaderBytes, '\0');
  wire::EncodeJournalHeader(reinterpret_cast<unsigned char*>(opening.data()), 0);
  opening += hello_;
  if (!WriteAll(fd, opening.data(), opening.size())) {
    StopCheckpoints(Errno("cannot write", next_path));
    close(fd);
    unlink(next_path.c_str());
    return false;
  }
  // Then the checkpoint, whole under a temporary name, renamed over the previous one.
  const std::string path = dir_ + "/" + wire::CheckpointFileName(rank_, pid_);
  const std::string tmp = path + ".tmp";
  unsigned char header[wire::kCheckpointHeaderBytes];
  std::memcpy(header, wire::kCheckpointMagic, sizeof wire::kCheckpointMagic);
  wire::PutU32(header + 8, wire::kCheckpointVersion);
  wire::PutU32(header + 12, static_cast<uint32_t>(next));
  wire::PutU64(header + 16, max_batch_seq);
  wire::PutU64(header + 24, state.size());
  wire::PutU32(header + 32, static_cast<uint32_t>(crc32(crc32(0, nullptr, 0),
                                                        reinterpret_cast<const Bytef*>(state.data()),
                                                        static_cast<uInt>(state.size()))));
  const int cfd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  const bool written = cfd >= 0 && WriteAll(cfd, reinterpret_cast<const char*>(header), sizeof header) &&
                       WriteAll(cfd, state.data(), state.size());
  const std::string why = written ? "" : Errno("cannot write", tmp);
  if (cfd >= 0) close(cfd);
  if (!written || rename(tmp.c_str(), path.c_str()) != 0) {
    StopCheckpoints(written ? Errno("cannot rename to", path) : why);
    unlink(tmp.c_str());
    close(fd);
    unlink(next_path.c_str());
    return false;
  }
  // The checkpoint holds every frame of the parts before `next`: they go.
  close(fd_);
  for (int p = first_part_; p <= part_; ++p) unlink(PartPath(p).c_str());
  fd_ = fd;
  path_ = next_path;
  part_ = first_part_ = next;
  status_.file = std::string(wire::kJournalDir) + "/" + wire::JournalPartFileName(rank_, pid_, next);
  status_.bytes = opening.size();
  status_.capped = false;  // what the cap left out is in the checkpoint
  ++status_.checkpoints;
  status_.checkpoint_bytes = sizeof header + state.size();
  status_.checkpoint_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - encode_started).count());
  return true;
}

bool ReadCheckpointFile(const std::string& path, JournalCheckpoint* out, std::string* error) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    *error = Errno("cannot open", path);
    return false;
  }
  std::string bytes;
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *error = Errno("cannot read", path);
      close(fd);
      return false;
    }
    if (n == 0) break;
    bytes.append(chunk, static_cast<size_t>(n));
  }
  close(fd);
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < wire::kCheckpointHeaderBytes ||
      std::memcmp(p, wire::kCheckpointMagic, sizeof wire::kCheckpointMagic) != 0) {
    *error = path + " is not a gpuwatch checkpoint (bad header)";
    return false;
  }
  if (const uint32_t v = wire::GetU32(p + 8); v != wire::kCheckpointVersion) {
    *error = path + " is a checkpoint of version " + std::to_string(v) + ", this collector reads " +
             std::to_string(wire::kCheckpointVersion);
    return false;
  }
  const uint64_t length = wire::GetU64(p + 24);
  if (length != bytes.size() - wire::kCheckpointHeaderBytes) {
    *error = path + " is truncated or has extra bytes (" + std::to_string(bytes.size() - wire::kCheckpointHeaderBytes) +
             " bytes of state, the header says " + std::to_string(length) + ")";
    return false;
  }
  const char* state = bytes.data() + wire::kCheckpointHeaderBytes;
  const uint32_t crc = static_cast<uint32_t>(
      crc32(crc32(0, nullptr, 0), reinterpret_cast<const Bytef*>(state), static_cast<uInt>(length)));
  if (crc != wire::GetU32(p + 32)) {
    *error = path + " is corrupt (its checksum does not match)";
    return false;
  }
  out->next_part = static_cast<int>(wire::GetU32(p + 12));
  out->max_batch_seq = wire::GetU64(p + 16);
  out->state.assign(state, length);
  return true;
}

bool JournalOptionsFromEnv(JournalOptions* o, std::string* error) {
  bool ok = true;
  if (const char* v = std::getenv("GPUWATCH_JOURNAL_MAX_BYTES"); v && *v) {
    char* end = nullptr;
    const unsigned long long n = std::strtoull(v, &end, 10);
    if (*end || n == 0) {
      *error = std::string("GPUWATCH_JOURNAL_MAX_BYTES=") + v + " is not a positive number of bytes";
      ok = false;
    } else {
      o->max_bytes = n;
    }
  }
  if (const char* v = std::getenv("GPUWATCH_JOURNAL_CHECKPOINT_S"); v && *v) {
    char* end = nullptr;
    const double s = std::strtod(v, &end);
    if (*end || !(s >= 0)) {
      *error = std::string("GPUWATCH_JOURNAL_CHECKPOINT_S=") + v + " is not a number of seconds (0: none)";
      ok = false;
    } else {
      o->checkpoint_s = s;
    }
  }
  return ok;
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
