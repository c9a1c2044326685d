// The straggler, found within each communicator: the calls of one communicator (its
// identity and sequence number) are lined up across the ranks that use it
// (collective_waits.h), so a tensor-parallel pair or a data-parallel group has its own
// straggler, with the time its peers waited for it. A communicator keyed by a pointer (not
// seen created) is never lined up.
#pragma once
#include <optional>
#include <vector>

#include "analyze/collective_waits.h"
#include "analyze/finding.h"
#include "analyze/rank_result.h"

namespace gpuwatch::collector {

// The straggler finding of the job (the communicator whose straggler cost its peers most;
// evidence.by_comm lists every communicator that has one), or none. Its time lost is the
// ranks' mean wait (the waits' sum over the job's ranks). The waits of every such
// communicator are the straggler's, not a communication cost: they are taken out of its
// members' `link_bandwidth` and `communication` findings in `per` (per rank index), and each
// rank that waited gets its own `straggler` finding in `cause`: its wait, naming the rank.
std::optional<Finding> StragglerFinding(const RankList& ranks, const CollectiveWaits& waits, double base,
                                        std::vector<std::vector<Finding>>& per,
                                        std::vector<std::vector<Finding>>& cause);

// Takes `wait_s` out of the findings `ids` of one rank, in that order (what the first did not
// hold out of the next), noting it in their evidence under `key`; returns what was taken.
double TakeWaitOut(std::vector<Finding>& findings, double wait_s, std::initializer_list<const char*> ids,
                   const char* key);

}  // namespace gpuwatch::collector
