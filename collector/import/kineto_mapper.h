// Maps each Kineto event, as it is read, to a record for the sorter and to what the rank's
// tables keep (rank_tables.h). docs/import.md is the mapping in words.
#pragma once
#include <string>

#include "import/rank_import.h"
#include "import/rank_tables.h"
#include "import/record_sorter.h"
#include "import/trace_event.h"

namespace gpuwatch::collector {

class KinetoMapper {
 public:
  KinetoMapper(RankTables& tables, RecordSorter& sorter, RankImportStats& stats)
      : tables_(tables), sorter_(sorter), stats_(stats) {}
  // False with `error` when the sorter cannot spill.
  bool Map(const TraceEvent& e, std::string* error);

 private:
  void NoteDevice(const TraceEvent& e, const DeviceSide& d);
  void NoteCollective(const TraceEvent& e);

  RankTables& tables_;
  RecordSorter& sorter_;
  RankImportStats& stats_;
  uint64_t order_ = 0;
};

}  // namespace gpuwatch::collector
