// See timestamp.h.
#include "import/timestamp.h"

namespace gpuwatch::collector {

bool MicrosTextToNs(std::string_view text, uint64_t* ns) {
  uint64_t v = 0;
  size_t i = 0;
  bool digits = false;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    const uint64_t d = static_cast<uint64_t>(text[i] - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
    digits = true;
  }
  if (v > UINT64_MAX / 1000) return false;
  v *= 1000;
  if (i < text.size() && text[i] == '.') {
    ++i;
    uint64_t scale = 100;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
      // Digits beyond the ns are dropped (truncated toward zero, as an integer cast would).
      if (scale > 0) {
        if (v > UINT64_MAX - 999) return false;
        v += static_cast<uint64_t>(text[i] - '0') * scale;
        scale /= 10;
      }
      digits = true;
    }
  }
  if (!digits || i != text.size()) return false;
  *ns = v;
  return true;
}

}  // namespace gpuwatch::collector
