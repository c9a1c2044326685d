#include "report/writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/out_dir.h"
#include "report/summary.h"

namespace gpuwatch::collector {

bool WriteAtomically(const std::string& path, const std::string& data, std::string* error) {
  const std::string tmp = path + ".tmp";
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    *error = ErrnoWhy("cannot create", tmp);
    return false;
  }
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = ENOSPC;
      *error = ErrnoWhy("cannot write", tmp);
      close(fd);
      unlink(tmp.c_str());
      return false;
    }
    done += static_cast<size_t>(n);
  }
  // fsync and close report delayed allocation failures (ENOSPC, EDQUOT) on some file systems.
  if (fsync(fd) != 0 && errno != EINVAL && errno != EROFS) {
    *error = ErrnoWhy("cannot write", tmp);
    close(fd);
    unlink(tmp.c_str());
    return false;
  }
  if (close(fd) != 0) {
    *error = ErrnoWhy("cannot write", tmp);
    unlink(tmp.c_str());
    return false;
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    *error = ErrnoWhy("cannot rename to", path);
    unlink(tmp.c_str());
    return false;
  }
  return true;
}

bool WriteSummaryFiles(const std::string& dir, const RenderedSummary& s, std::string* error) {
  errno = 0;
  if (!MakeDirs(dir, error)) return false;
  // summary.json last: readers (tests, scripts, `gpuwatch run`) take it as the sign that
  // the summary is complete, so the others must already be in place.
  return WriteAtomically(dir + "/summary.txt", s.text, error) &&
         (s.html.empty() || WriteAtomically(dir + "/report.html", s.html, error)) &&
         WriteAtomically(dir + "/summary.json", s.json, error);
}

}  // namespace gpuwatch::collector
