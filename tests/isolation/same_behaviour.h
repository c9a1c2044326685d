// The suite's one comparison: a program run plainly and with libgpuwatch.so preloaded
// (collector autostarted on a private socket, outputs outside the program's folder) must
// end the same way, print the same and leave the same files.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace gpuwatch::isolation {

// What a run showed: exit code (-1 when killed) and signal, output, and every regular file
// left under its working folder (relative path -> content).
struct Observed {
  int exit_code = -1;
  int signal = 0;
  std::string out, err;
  std::map<std::string, std::string> files;
  double wall_s = 0;
};

struct BothRuns {
  Observed plain, watched;
  std::string out_dir;   // GPUWATCH_OUT of the watched run
  std::string sock_dir;  // GPUWATCH_SOCKET_DIR of the watched run (the collector's log is beside)
};

// The suite's programs (build/bin/iso_NAME), the simulator's and the toolkit's libraries.
std::string Program(const std::string& name);
// The library the watched runs preload (its path, without a sanitizer runtime before it).
std::string PreloadedLibrary();
inline constexpr const char* kSimLibs = GPUWATCH_SIM_DIR;
inline constexpr const char* kCudaLibs = GPUWATCH_CUDA_LIB_DIR;

// Runs argv in a fresh folder `name/plain`, then in `name/watched` with the library
// preloaded; `env` goes to both runs, `watched_env` to the watched one only (it may override
// the defaults: GPUWATCH_SOCKET_DIR, GPUWATCH_OUT, GPUWATCH_COLLECTOR_BIN).
BothRuns RunBoth(const std::string& name, const std::vector<std::string>& argv,
                 const std::map<std::string, std::string>& env = {},
                 const std::map<std::string, std::string>& watched_env = {}, double timeout_s = 60);

// A line per difference between the runs (exit, signal, stdout, stderr, files); empty when
// they behaved the same. Meant for CHECK(Differences(r).empty()) with the list printed.
std::vector<std::string> Differences(const BothRuns& r);

}  // namespace gpuwatch::isolation
