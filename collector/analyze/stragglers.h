// The straggler, found within each communicator: the calls of one communicator (its
// identity and sequence number) are lined up across the ranks that use it, so a tensor-
// parallel pair or a data-parallel group has its own straggler, with the time its peers
// waited for it. A communicator keyed by a pointer (not seen created) is never lined up.
#pragma once
#include <optional>
#include <vector>

#include "analyze/finding.h"
#include "analyze/rank_result.h"

namespace gpuwatch::collector {

// The straggler finding of the job (the communicator whose straggler cost its peers most;
// evidence.by_comm lists every communicator that has one), or none. The waits of every
// such communicator are taken out of its members' `communication` findings in `per`
// (per rank index), as they are not a communication cost.
std::optional<Finding> StragglerFinding(const RankList& ranks, double base, std::vector<std::vector<Finding>>& per);

}  // namespace gpuwatch::collector
