#include "overhead_settings.h"

#include <cstdlib>

namespace gpuwatch::wire {

bool ParseOverheadShare(std::string_view s, double* share, std::string* error) {
  const std::string v(s);
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (*end == '%') {
    x /= 100;
    ++end;
  }
  if (*end != '\0' || !(x > 0 && x <= 1)) {
    *error = "'" + v + "' is not a share of the wall time: expected such as 1% or 0.01, above 0 and at most 100%";
    return false;
  }
  *share = x;
  return true;
}

bool ParseCuptiSetting(std::string_view s, CuptiSetting* mode, std::string* error) {
  if (s == "budget" || s == "on") *mode = CuptiSetting::kBudget;
  else if (s == "full") *mode = CuptiSetting::kFull;
  else if (s == "off") *mode = CuptiSetting::kOff;
  else {
    *error = "'" + std::string(s) + "' is not a CUPTI mode: expected budget, full or off";
    return false;
  }
  return true;
}

}  // namespace gpuwatch::wire
