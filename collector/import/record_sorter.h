// Puts a rank's records in time order in bounded memory: an external merge sort. Records
// fill a buffer of at most `max_in_memory`; a full buffer is sorted and written to an
// unlinked temporary file (a run); at the end the runs are merged with a heap, reading
// each run through a small buffer. Memory: max_in_memory records plus one read buffer per
// run; disk: the records themselves.
#pragma once
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "import/import_record.h"

namespace gpuwatch::collector {

class RecordSorter {
 public:
  explicit RecordSorter(size_t max_in_memory = kDefaultMaxInMemory) : max_(max_in_memory < 2 ? 2 : max_in_memory) {}
  ~RecordSorter();
  RecordSorter(const RecordSorter&) = delete;
  RecordSorter& operator=(const RecordSorter&) = delete;

  // False with `error` when a run cannot be written (disk full).
  bool Add(const ImportRecord& r, std::string* error);
  // Hands every record to `take` in order; false with `error` on a read failure.
  bool Drain(const std::function<void(const ImportRecord&)>& take, std::string* error);
  size_t runs() const { return runs_.size(); }
  uint64_t count() const { return count_; }

  // About 100 MiB of records.
  static constexpr size_t kDefaultMaxInMemory = 1 << 20;

 private:
  bool Spill(std::string* error);

  size_t max_;
  std::vector<ImportRecord> buf_;
  std::vector<FILE*> runs_;
  uint64_t count_ = 0;
};

}  // namespace gpuwatch::collector
