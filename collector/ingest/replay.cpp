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
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    bool spool = false;
    int rank = 0, pid = 0, part = 0;
    if (!ParseFrameFileName(name, &spool, &rank, &pid, &part)) {
      result->notes.push_back("ignored " + jdir + "/" + name + ": not a journal or spool name");
      continue;
    }
    groups[{rank, pid}].push_back({spool, part, name});
  }
  closedir(d);

  std::vector<std::unique_ptr<Connection>> last;  // open until hangs are checked
  for (auto& [key, files] : groups) {
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
    for (const FileRef& f : files) {
      std::vector<RankSink*> touched;
      const std::string path = jdir + "/" + f.name;
      bool broken = false;
      FrameFileInfo info;
      auto on_frame = [&](const wire::Frame& frame, std::string_view raw) {
        if (broken) return;
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
