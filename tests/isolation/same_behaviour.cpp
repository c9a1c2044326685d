#include "same_behaviour.h"

#include <chrono>
#include <filesystem>

#include "subprocess.h"

namespace gpuwatch::isolation {
namespace fs = std::filesystem;

std::string Program(const std::string& name) { return std::string(GPUWATCH_BIN_DIR) + "/iso_" + name; }

std::string PreloadedLibrary() {
  const std::string p = e2e::TestPreload();
  return p.substr(p.rfind(':') + 1);  // after the ASan runtime, when one comes first
}

namespace {

Observed RunIn(const std::string& dir, const std::vector<std::string>& argv,
               const std::map<std::string, std::string>& env, double timeout_s) {
  // The shell runs preloaded too in the watched run, as a job's launcher script would.
  std::vector<std::string> cmd = {"/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", dir};
  cmd.insert(cmd.end(), argv.begin(), argv.end());
  const auto t0 = std::chrono::steady_clock::now();
  const e2e::RunResult r = e2e::Run(cmd, env, timeout_s);
  Observed o;
  o.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  o.exit_code = r.exit_code;
  o.signal = r.signal;
  o.out = r.out;
  o.err = r.err;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) o.files[fs::relative(e.path(), dir).string()] = e2e::ReadFile(e.path());
  return o;
}

std::string Clip(const std::string& s) { return s.size() > 400 ? s.substr(0, 400) + "..." : s; }

}  // namespace

BothRuns RunBoth(const std::string& name, const std::vector<std::string>& argv,
                 const std::map<std::string, std::string>& env,
                 const std::map<std::string, std::string>& watched_env, double timeout_s) {
  const std::string root = e2e::FreshDir(name);
  BothRuns r;
  r.out_dir = root + "/gpuwatch-out";
  r.sock_dir = root + "/sock";
  fs::create_directories(root + "/plain");
  fs::create_directories(root + "/watched");
  r.plain = RunIn(root + "/plain", argv, env, timeout_s);
  std::map<std::string, std::string> w = env;
  w["LD_PRELOAD"] = e2e::TestPreload();
  w["GPUWATCH_SOCKET_DIR"] = r.sock_dir;
  w["GPUWATCH_OUT"] = r.out_dir;
  w["GPUWATCH_COLLECTOR_BIN"] = std::string(GPUWATCH_BIN_DIR) + "/gpuwatch-collector";
  for (const auto& [k, v] : watched_env) w[k] = v;
  r.watched = RunIn(root + "/watched", argv, w, timeout_s);
  return r;
}

std::vector<std::string> Differences(const BothRuns& r) {
  std::vector<std::string> d;
  const Observed &a = r.plain, &b = r.watched;
  if (a.exit_code != b.exit_code)
    d.push_back("exit code " + std::to_string(a.exit_code) + " plain, " + std::to_string(b.exit_code) + " watched");
  if (a.signal != b.signal)
    d.push_back("signal " + std::to_string(a.signal) + " plain, " + std::to_string(b.signal) + " watched");
  if (a.out != b.out) d.push_back("stdout plain [" + Clip(a.out) + "] watched [" + Clip(b.out) + "]");
  if (a.err != b.err) d.push_back("stderr plain [" + Clip(a.err) + "] watched [" + Clip(b.err) + "]");
  for (const auto& [path, content] : a.files) {
    auto it = b.files.find(path);
    if (it == b.files.end()) d.push_back("file " + path + " missing in the watched run");
    else if (it->second != content) d.push_back("file " + path + " differs: [" + Clip(content) + "] [" + Clip(it->second) + "]");
  }
  for (const auto& [path, content] : b.files)
    if (!a.files.count(path)) d.push_back("file " + path + " only in the watched run");
  return d;
}

}  // namespace gpuwatch::isolation
