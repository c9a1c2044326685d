#include "support.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace simtest {

Child spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env) {
  static int counter = 0;
  Child c;
  std::string base = "/tmp/simtest-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
  c.out_path = base + ".out";
  c.err_path = base + ".err";
  std::map<std::string, std::string> merged;
  for (char** e = environ; *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq) merged[std::string(*e, eq - *e)] = eq + 1;
  }
  for (auto& [k, v] : env) merged[k] = v;
  std::vector<std::string> env_strings;
  for (auto& [k, v] : merged) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, c.out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, c.err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (posix_spawn(&c.pid, args[0], &fa, nullptr, args.data(), envp.data()) != 0) c.pid = -1;
  posix_spawn_file_actions_destroy(&fa);
  return c;
}

Result wait(const Child& c) {
  Result r;
  if (c.pid < 0) return r;
  int st = 0;
  waitpid(c.pid, &st, 0);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.out = read_file(c.out_path);
  r.err = read_file(c.err_path);
  unlink(c.out_path.c_str());
  unlink(c.err_path.c_str());
  return r;
}

std::string make_temp_dir() {
  char tmpl[] = "/tmp/simtest-truth-XXXXXX";
  const char* d = mkdtemp(tmpl);
  return d ? d : "";
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::map<std::string, double> parse_kv(const std::string& text) {
  std::map<std::string, double> kv;
  std::istringstream in(text);
  std::string tok;
  while (in >> tok) {
    auto eq = tok.find('=');
    if (eq == std::string::npos) continue;
    char* end = nullptr;
    double v = std::strtod(tok.c_str() + eq + 1, &end);
    if (end && *end == '\0') kv[tok.substr(0, eq)] = v;
  }
  return kv;
}

}  // namespace simtest
