// See record_sorter.h.
#include "import/record_sorter.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <queue>

namespace gpuwatch::collector {
namespace {

constexpr size_t kReadBatch = 4096;  // records read from a run at a time

// One run being merged: its file and what was read of it.
struct RunReader {
  FILE* f;
  std::vector<ImportRecord> buf;
  size_t pos = 0;
  bool Next(std::string* error) {
    if (++pos < buf.size()) return true;
    buf.resize(kReadBatch);
    const size_t n = std::fread(buf.data(), sizeof(ImportRecord), kReadBatch, f);
    if (n == 0 && std::ferror(f)) *error = std::string("cannot read a sorted run: ") + std::strerror(errno);
    buf.resize(n);
    pos = 0;
    return n > 0;
  }
  const ImportRecord& Top() const { return buf[pos]; }
};

}  // namespace

RecordSorter::~RecordSorter() {
  for (FILE* f : runs_) std::fclose(f);
}

bool RecordSorter::Add(const ImportRecord& r, std::string* error) {
  if (buf_.size() >= max_ && !Spill(error)) return false;
  if (buf_.capacity() == 0) buf_.reserve(std::min<size_t>(max_, 1 << 16));
  buf_.push_back(r);
  ++count_;
  return true;
}

bool RecordSorter::Spill(std::string* error) {
  std::sort(buf_.begin(), buf_.end());
  FILE* f = std::tmpfile();  // unlinked: gone when closed, or when the process dies
  if (!f || std::fwrite(buf_.data(), sizeof(ImportRecord), buf_.size(), f) != buf_.size() || std::fflush(f) != 0) {
    *error = std::string("cannot write a sorted run to a temporary file: ") + std::strerror(errno);
    if (f) std::fclose(f);
    return false;
  }
  runs_.push_back(f);
  buf_.clear();
  return true;
}

bool RecordSorter::Drain(const std::function<void(const ImportRecord&)>& take, std::string* error) {
  if (runs_.empty()) {
    std::sort(buf_.begin(), buf_.end());
    for (const ImportRecord& r : buf_) take(r);
    buf_.clear();
    return true;
  }
  if (!buf_.empty() && !Spill(error)) return false;
  std::vector<RunReader> readers;
  readers.reserve(runs_.size());
  for (FILE* f : runs_) {
    std::rewind(f);
    readers.push_back(RunReader{f, {}, 0});  // empty: the first Next() reads a batch
  }
  auto later = [&](size_t a, size_t b) { return readers[b].Top() < readers[a].Top(); };
  std::priority_queue<size_t, std::vector<size_t>, decltype(later)> heap(later);
  for (size_t i = 0; i < readers.size(); ++i) {
    if (readers[i].Next(error)) heap.push(i);
    if (!error->empty()) return false;
  }
  while (!heap.empty()) {
    const size_t i = heap.top();
    heap.pop();
    take(readers[i].Top());
    if (readers[i].Next(error)) heap.push(i);
    if (!error->empty()) return false;
  }
  return true;
}

}  // namespace gpuwatch::collector
