// Evidence labels (evidence_labels.h): keys of the table, keys outside it, values in units.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "report/evidence_labels.h"

namespace col = gpuwatch::collector;
using U = col::EvidenceUnit;
using nlohmann::json;

TEST_CASE("collector: evidence keys read as labels with units, known or not") {
  const col::EvidenceLabel host = col::LabelOfEvidence("gpu_idle_waiting_for_host_s");
  CHECK(host.label == "GPU idle waiting for the host");
  CHECK(host.unit == U::kSeconds);
  // A per-rank map: its value's unit, ", by rank" in the label.
  const col::EvidenceLabel by = col::LabelOfEvidence("wait_s_by_rank");
  CHECK(by.unit == U::kSeconds);
  CHECK(col::LabelOfEvidence("foo_wait_s_by_rank").label == "foo wait, by rank");
  // Keys no table lists: unit from the suffix, words from the name, never an underscore.
  CHECK(col::LabelOfEvidence("queue_depth_bytes").label == "queue depth");
  CHECK(col::LabelOfEvidence("queue_depth_bytes").unit == U::kBytes);
  CHECK(col::LabelOfEvidence("stolen_s_in_gaps").label == "stolen in gaps");
  CHECK(col::LabelOfEvidence("stolen_s_in_gaps").unit == U::kSeconds);
  CHECK(col::LabelOfEvidence("spill_share").label == "spill share");
  CHECK(col::LabelOfEvidence("spill_share").unit == U::kShare);
  CHECK(col::LabelOfEvidence("new_thing").label == "new thing");
  CHECK(col::LabelOfEvidence("time_lost").unit == U::kHidden);  // a note naming JSON keys
  CHECK(col::ReadableKey("snake_case") == "snake case");
}

TEST_CASE("collector: evidence values print in their units") {
  CHECK(col::EvidenceValueText(0.7642, U::kSeconds) == "764.200 ms");
  CHECK(col::EvidenceValueText(0.79, U::kShare) == "79%");
  CHECK(col::EvidenceValueText(0.004, U::kShare) == "0.40%");
  CHECK(col::EvidenceValueText(38.2, U::kMillis) == "38.200 ms");
  CHECK(col::EvidenceValueText(12, U::kMicros) == "12.0 us");
  CHECK(col::EvidenceValueText(1500000, U::kBytes) == "1.50 MB");
  CHECK(col::EvidenceValueText(3, U::kRank) == "rank 3");
  CHECK(col::EvidenceValueText(7, U::kNumber) == "7");
  CHECK(col::EvidenceValueText(0.123456, U::kNumber) == "0.1235");
  CHECK(col::EvidenceValueText("cpu_bound", U::kText) == "cpu bound");
  CHECK(col::EvidenceValueText("fwd_bwd", U::kName) == "fwd_bwd");
  CHECK(col::EvidenceValueText(nullptr, U::kSeconds) == "-");
  CHECK(col::EvidenceValueText(true, U::kNumber) == "yes");
}
