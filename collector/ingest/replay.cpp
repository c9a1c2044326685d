#include "ingest/replay.h"

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <tuple>

#include "ingest/connection.h"
#include "journal.h"  // proto/journal.h
#include "ingest/journal_store.h"

namespace gpuwatch::collector {
namespace {

constexpr size_t kMaxRebuiltFromListed = 16;

struct FileRef {
  bool spool;
  int part;
  std::string name;
};

}  // namespace

bool ParseFrameFileName(const std::string& name, bool* spool, int* rank, int* pid, int* part) {
  const std::string_view prefix = "spool-";
  std::string rest = name;
  *spool = rest.rfind(prefix, 0) == 0;
  if (*spool) rest = rest.substr(prefix.size());
  int r = 0, p = 0, n = 0, consumed = 0;
  *part = 0;
  if (std::sscanf(rest.c_str(), "rank-%d-%d.%d.frames%n", &r, &p, &n, &consumed) == 3 &&
      static_cast<size_t>(consumed) == rest.size() && !*spool && n > 0) {
    *part = n;
  } else if (!(std::sscanf(rest.c_str(), "rank-%d-%d.frames%n", &r, &p, &consumed) == 2 &&
               static_cast<size_t>(consumed) == rest.size())) {
    return false;
  }
  // Only the canonical spelling: what the writers produce, nothing else.
  const std::string canonical =
      *part ? "rank-" + std::to_string(r) + "-" + std::to_string(p) + "." + std::to_string(*part) +
                  ".frames"
            : wire::JournalFileName(r, p);
  if (canonical != rest) return false;
  *rank = r;
  *pid = p;
  return true;
}

bool ParseCheckpointFileName(const std::string& name, int* rank, int* pid) {
  int r = 0, p = 0, consumed = 0;
  if (std::sscanf(name.c_str(), "rank-%d-%d.checkpoint%n", &r, &p, &consumed) != 2 ||
      static_cast<size_t>(consumed) != name.size() || name != wire::CheckpointFileName(r, p))
    return false;
  *rank = r;
  *pid = p;
  return true;
}

bool HasCheckpoints(const std::string& dir) {
  DIR* d = opendir((dir + "/" + wire::kJournalDir).c_str());
  if (!d) return false;
  bool any = false;
  int rank = 0, pid = 0;
  while (dirent* e = readdir(d))
    if (ParseCheckpointFileName(e->d_name, &rank, &pid)) any = true;
  closedir(d);
  return any;
}

bool ReplayDir(const std::string& dir, RankDirectory& jobs, ReplayResult* result, std::string* error,
               const std::function<std::vector<std::string>()>& before_close) {
  const std::string jdir = dir + "/" + wire::kJournalDir;
  DIR* d = opendir(jdir.c_str());
  if (!d) {
    *error = "cannot read " + jdir + ": " + std::strerror(errno);
    return false;
  }
  // (rank, pid) -> files in replay order: journals (by part), then spools.
  std::map<std::pair<int, int>, std::vector<FileRef>> groups;
  std::map<std::pair<int, int>, std::string> checkpoints;  // (rank, pid) -> its checkpoint's name
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    bool spool = false;
    int rank = 0, pid = 0, part = 0;
    if (ParseCheckpointFileName(name, &rank, &pid)) {
      checkpoints[{rank, pid}] = name;
      continue;
    }
    // A checkpoint its collector was killed writing: the one before it stands.
    if (name.size() > 15 && name.compare(name.size() - 15, 15, ".checkpoint.tmp") == 0) continue;
    if (!ParseFrameFileName(name, &spool, &rank, &pid, &part)) {
      result->notes.push_back("ignored " + jdir + "/" + name + ": not a journal or spool name");
      continue;
    }
    groups[{rank, pid}].push_back({spool, part, name});
  }
  closedir(d);

  std::vector<std::unique_ptr<Connection>> last;  // open until hangs are checked
  for (auto& [key, files] : groups) {
    const int group_rank = key.first;  // a lambda below names it (clang 14 cannot capture a binding)
    std::sort(files.begin(), files.end(), [](const FileRef& a, const FileRef& b) {
      return std::tie(a.spool, a.part) < std::tie(b.spool, b.part);
    });
    std::unique_ptr<Connection> conn;
    wire::FrameScratch scratch;
    const int pid = key.second;
    // The library re-spools the batches it sent last before its collector died (the socket
    // may have swallowed them): a batch already replayed from the journal has a seq no
    // greater than one seen before, and is skipped.
    uint64_t max_seq_seen = 0;
    // The rank's checkpoint: its state replaces the rank's once the first Hello after it
    // attached the rank, and the journal parts before it are not read (it holds them).
    JournalCheckpoint checkpoint;
    std::string checkpoint_name;
    bool restore_pending = false;
    if (auto c = checkpoints.find(key); c != checkpoints.end()) {
      std::string why;
      if (ReadCheckpointFile(jdir + "/" + c->second, &checkpoint, &why)) {
        checkpoint_name = c->second;
        restore_pending = true;
        max_seq_seen = checkpoint.max_batch_seq;
        files.erase(std::remove_if(files.begin(), files.end(),
                                   [&](const FileRef& f) { return !f.spool && f.part < checkpoint.next_part; }),
                    files.end());
      } else {
        result->notes.push_back(why + "; rank " + std::to_string(key.first) +
                                " is rebuilt from the frames kept after it only");
      }
    }
    for (const FileRef& f : files) {
      std::vector<RankSink*> touched;
      const std::string path = jdir + "/" + f.name;
      bool broken = false;
      bool first_frame = true;
      FrameFileInfo info;
      auto on_frame = [&](const wire::Frame& frame, std::string_view raw) {
        if (broken) return;
        // A journal part after a checkpoint opens with the Hello of the connection that was
        // open then, and a spool after the journal with the Hello the library wrote when
        // that connection broke: either goes on, it is not a new one. (A new connection
        // would flush the rank first and close its device timeline at the host's last
        // step, cutting off the device work still to come.)
        const bool continues = first_frame && (f.spool || f.part > 0) && conn;
        first_frame = false;
        if (continues && frame.body_case() == wire::Frame::kHello) return;
        if (frame.body_case() == wire::Frame::kBatch && frame.batch().seq() != 0) {
          if (frame.batch().seq() <= max_seq_seen) return;
          max_seq_seen = frame.batch().seq();
        }
        const auto now = Clock::now();
        if (frame.body_case() == wire::Frame::kHello || !conn) {
          if (conn) conn->Close(now);
          conn = std::make_unique<Connection>(pid, jobs, now);
        }
        if (!conn->OnBytes(raw, scratch, now)) {
          result->notes.push_back(path + ": " + conn->error() + "; the rest of the file is ignored");
          conn->Close(now);
          conn.reset();
          broken = true;
          return;
        }
        if (restore_pending && conn->rank()) {
          restore_pending = false;
          std::string why;
          if (conn->rank()->RestoreState(checkpoint.state, &why)) {
            ++result->checkpoints;
            RankStorage& s = conn->rank()->storage();
            s.rebuilt_from.push_back(std::string(wire::kJournalDir) + "/" + checkpoint_name);
          } else {
            result->notes.push_back(jdir + "/" + checkpoint_name + ": " + why + "; rank " +
                                    std::to_string(group_rank) + " is rebuilt from the frames kept after it only");
          }
        }
        if (RankSink* r = conn->rank();
            r && std::find(touched.begin(), touched.end(), r) == touched.end())
          touched.push_back(r);
      };
      const bool ok = ScanFrameFile(path, on_frame, &info);
      ++result->files;
      if (!ok) result->notes.push_back(info.error);
      if (info.truncated_tail > 0)
        result->notes.push_back(path + ": ignored an incomplete last frame (" +
                                std::to_string(info.truncated_tail) + " bytes)");
      if (f.spool && (info.flags & wire::kJournalCapped))
        result->notes.push_back(path + ": the rank's spool reached its cap; later records are missing");
      if (!f.spool && (info.flags & wire::kJournalCapped))
        result->notes.push_back(path + ": the collector's journal reached its cap; later frames are missing");
      for (RankSink* r : touched) {
        RankStorage& s = r->storage();
        if (s.rebuilt_from.size() < kMaxRebuiltFromListed &&
            std::find(s.rebuilt_from.begin(), s.rebuilt_from.end(),
                      std::string(wire::kJournalDir) + "/" + f.name) == s.rebuilt_from.end())
          s.rebuilt_from.push_back(std::string(wire::kJournalDir) + "/" + f.name);
        s.truncated_tail_bytes += info.truncated_tail;
        if (f.spool) s.spool_capped |= (info.flags & wire::kJournalCapped) != 0;
        if (!f.spool && (info.flags & wire::kJournalCapped)) {
          s.journal.file = std::string(wire::kJournalDir) + "/" + f.name;
          s.journal.capped = true;
          s.journal.bytes = info.bytes;
        }
      }
    }
    if (conn) last.push_back(std::move(conn));
  }
  if (before_close)
    for (const std::string& line : before_close()) result->notes.push_back(line);
  const auto now = Clock::now();
  for (auto& c : last) c->Close(now);
  return true;
}

}  // namespace gpuwatch::collector
