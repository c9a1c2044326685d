// See trace_parts.h.
#include "trace/trace_parts.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "common/out_dir.h"
#include "trace/trace_file.h"

namespace gpuwatch::collector {
namespace {

namespace fs = std::filesystem;

// The length of `bytes`' whole `Trace.packet` records (field 1, length-delimited): a
// collector killed in a write leaves at most one cut packet at the end.
size_t WholeTracePackets(const std::string& bytes) {
  size_t pos = 0, whole = 0;
  while (pos < bytes.size()) {
    if (static_cast<unsigned char>(bytes[pos]) != 0x0A) break;
    uint64_t len = 0;
    int shift = 0;
    size_t p = pos + 1;
    for (; p < bytes.size() && shift < 64; ++p, shift += 7) {
      len |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[p]) & 0x7F) << shift;
      if ((static_cast<unsigned char>(bytes[p]) & 0x80) == 0) break;
    }
    if (p >= bytes.size()) break;
    const size_t end = p + 1 + len;
    if (len > bytes.size() || end > bytes.size()) break;
    pos = whole = end;
  }
  return whole;
}

bool ReadWholePart(const fs::path& p, std::string* out) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return false;
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

}  // namespace

bool AssembleTraceParts(const std::string& out_dir, const std::string& into, std::string* note) {
  std::error_code ec;
  fs::path newest;
  fs::file_time_type newest_time{};
  for (const auto& e : fs::directory_iterator(out_dir, ec)) {
    if (!e.is_directory(ec) || e.path().filename().string().rfind(kTracePartsPrefix, 0) != 0) continue;
    const auto t = fs::last_write_time(e.path(), ec);
    if (newest.empty() || t > newest_time) newest = e.path(), newest_time = t;
  }
  if (newest.empty()) {
    *note = "no trace and no trace parts in " + out_dir;
    return false;
  }
  std::vector<fs::path> parts;
  if (fs::exists(newest / "summary.perfetto-trace", ec)) parts.push_back(newest / "summary.perfetto-trace");
  std::vector<fs::path> details;
  for (const auto& e : fs::directory_iterator(newest, ec))
    if (e.path().filename().string().rfind("detail-", 0) == 0) details.push_back(e.path());
  std::sort(details.begin(), details.end());
  parts.insert(parts.end(), details.begin(), details.end());
  const std::string tmp = into + ".assembling";
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    *note = "cannot write " + tmp;
    return false;
  }
  size_t written = 0, used = 0;
  std::string bytes;
  bool ok = true;
  for (const fs::path& p : parts) {
    if (!ReadWholePart(p, &bytes)) continue;
    const size_t n = WholeTracePackets(bytes);
    if (n == 0) continue;
    ok = ok && WriteAll(fd, bytes.data(), n);
    written += n;
    ++used;
  }
  ok = close(fd) == 0 && ok;
  if (!ok || written == 0 || std::rename(tmp.c_str(), into.c_str()) != 0) {
    std::remove(tmp.c_str());
    *note = written == 0 ? "the trace parts in " + newest.string() + " hold no whole packet" : "cannot write " + into;
    return false;
  }
  *note = "trace: " + into + " assembled from the " + std::to_string(used) + " part(s) the collector left in " +
          newest.string() + " (the run until it stopped, without the detail track's spans)";
  return true;
}

}  // namespace gpuwatch::collector
