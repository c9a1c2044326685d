// See python_frames.h.
#include "interpret/python_frames.h"

namespace gpuwatch::collector {
namespace {

// The file of "file:line in function": up to the ':' before the line number.
std::string_view FileOf(std::string_view where) {
  const size_t in = where.rfind(" in ");
  const std::string_view head = where.substr(0, in == std::string_view::npos ? where.size() : in);
  const size_t colon = head.rfind(':');
  return colon == std::string_view::npos ? head : head.substr(0, colon);
}

bool Has(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

}  // namespace

bool IsFrameworkFrame(std::string_view where) {
  const std::string_view file = FileOf(where);
  if (Has(file, "site-packages/") || Has(file, "dist-packages/")) return true;
  if (Has(file, "/torch/") || file.substr(0, 6) == "torch/") return true;
  if (file.substr(0, 7) == "<frozen") return true;
  // The standard library: …/lib/python3.11/x.py (packages were caught above).
  const size_t lib = file.find("/lib/python3");
  const size_t lib64 = file.find("/lib64/python3");
  return lib != std::string_view::npos || lib64 != std::string_view::npos;
}

std::string ShortWhere(std::string_view where) {
  const std::string_view file = FileOf(where);
  const size_t last = file.rfind('/');
  if (last == std::string_view::npos || last == 0) return std::string(where);
  const size_t before = file.rfind('/', last - 1);
  return std::string(before == std::string_view::npos ? where : where.substr(before + 1));
}

std::string UserFrame(const std::vector<std::string>& stack) {
  for (const std::string& f : stack)
    if (!IsFrameworkFrame(f)) return f;
  return stack.empty() ? std::string() : stack.front();
}

bool IsDataLoading(const std::vector<std::string>& stack) {
  for (const std::string& f : stack)
    if (Has(FileOf(f), "torch/utils/data/")) return true;
  return false;
}

}  // namespace gpuwatch::collector
