// Findings that explain another finding's loss instead of adding one: the same time lost,
// told by its cause (input_io says why data_loading's host waited). Views show such a
// finding inside the one it explains, so a reader never adds the two up.
#pragma once
#include <string_view>

namespace gpuwatch::collector {

// The id of the finding `id` explains, or empty when it is a loss of its own.
inline std::string_view FindingItExplains(std::string_view id) {
  if (id == "input_io") return "data_loading";
  return {};
}

}  // namespace gpuwatch::collector
