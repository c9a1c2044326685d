// The overhead budget's settings (GPUWATCH_OVERHEAD, GPUWATCH_CUPTI), read by the library
// from its environment and checked by `gpuwatch run --overhead/--cupti` before it sets them,
// so that both read a value alike.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace gpuwatch::wire {

// What the budget allows on top of its share of the wall time, over the whole run: a short
// run (a test, a bundled scenario) is recorded whole.
inline constexpr uint64_t kOverheadAllowanceNs = 50'000'000;

// "1%", "0.5%" or a share such as "0.01": in (0, 1]. False with `error` (one line) otherwise.
bool ParseOverheadShare(std::string_view s, double* share, std::string* error);

// The CUPTI modes GPUWATCH_CUPTI takes ("on" is the budget's older name); the library's
// CuptiBudget::Mode, and on the wire (CuptiMode) the value + 1.
enum class CuptiSetting { kBudget = 0, kFull = 1, kOff = 2 };
bool ParseCuptiSetting(std::string_view s, CuptiSetting* mode, std::string* error);

}  // namespace gpuwatch::wire
