// Maps each Kineto event, as it is read, to a record for the sorter and to what the rank's
// tables keep (rank_tables.h). docs/import.md is the mapping in words.
#pragma once
#include <string>

#include "common/host_spans.h"
#include "import/rank_import.h"
#include "import/rank_tables.h"
#include "import/record_sorter.h"
#include "import/trace_event.h"

namespace gpuwatch::collector {

class KinetoMapper {
 public:
  // `host_spans`: where the spans of CPU operators and runtime/driver calls go (null: not kept).
  KinetoMapper(RankTables& tables, RecordSorter& sorter, RankImportStats& stats,
               std::vector<HostSpan>* host_spans = nullptr)
      : tables_(tables), sorter_(sorter), stats_(stats), host_spans_(host_spans) {}
  // False with `error` when the sorter cannot spill.
  bool Map(const TraceEvent& e, std::string* error);

 private:
  void NoteDevice(const TraceEvent& e, const DeviceSide& d);
  void NoteCollective(const TraceEvent& e);

  RankTables& tables_;
  RecordSorter& sorter_;
  RankImportStats& stats_;
  std::vector<HostSpan>* host_spans_;
  uint64_t order_ = 0;
};

}  // namespace gpuwatch::collector
