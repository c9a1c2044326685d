// Where a job's files go, and making that directory: shared by the summary writer, the
// journals and the trace.
#pragma once
#include <cstddef>
#include <string>

namespace gpuwatch::collector {

// Where a job's summary goes: `--out` if given, else the first rank's Hello.out_dir if it
// is absolute, else ./gpuwatch-out.
std::string ChooseOutDir(const std::string& override_dir, const std::string& first_out_dir);

// mkdir -p; what it creates gets `mode`. False with `error` set (one line) on failure.
bool MakeDirs(const std::string& dir, std::string* error, unsigned mode = 0755);
// "WHAT PATH: strerror(errno)": the one-line error of a failed file operation.
std::string ErrnoWhy(const std::string& what, const std::string& path);
// write(2) until all `n` bytes are written (EINTR retried); false with errno set (ENOSPC
// for a write that wrote nothing).
bool WriteAll(int fd, const char* p, size_t n);

}  // namespace gpuwatch::collector
