// TCP, only when asked (--listen-tcp): loopback unless an address is given, and every TCP
// peer must present the job token in its Hello (docs/RELIABILITY.md, "Nobody else gets
// in"). The real collector binary, fake ranks over TCP and over its Unix socket. And where
// that socket lives (GPUWATCH_SOCKET_DIR).
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <regex>

#include "endpoint.h"
#include "ingest/tcp_listener.h"
#include "procs.h"

using namespace gwtest;

namespace {

// GPUWATCH_TOKEN for the collectors a test starts (they inherit it), restored afterwards.
class TokenEnv {
 public:
  explicit TokenEnv(const char* value) {
    if (const char* old = std::getenv("GPUWATCH_TOKEN")) old_ = old;
    if (value) setenv("GPUWATCH_TOKEN", value, 1);
    else unsetenv("GPUWATCH_TOKEN");
  }
  ~TokenEnv() {
    if (old_.empty()) unsetenv("GPUWATCH_TOKEN");
    else setenv("GPUWATCH_TOKEN", old_.c_str(), 1);
  }

 private:
  std::string old_;
};

// The address the collector says it bound ("listening on TCP ADDR:PORT").
std::pair<std::string, uint16_t> TcpAddress(const Collector& col) {
  static const std::regex re(R"(listening on TCP (\S+):(\d+) )");
  std::smatch m;
  std::string log;
  const bool found = PollUntil([&] {
    log = col.Stderr();
    return std::regex_search(log, m, re);
  });
  INFO(log);
  REQUIRE(found);
  return {m[1].str(), static_cast<uint16_t>(std::stoi(m[2].str()))};
}

// The local address of the listening TCP socket on `port` as the kernel has it
// (/proc/net/tcp, hex, e.g. "0100007F" for 127.0.0.1), "" if there is none.
std::string KernelListenAddress(uint16_t port) {
  std::istringstream in(Slurp("/proc/net/tcp"));
  std::string line;
  std::getline(in, line);  // header
  char want[8];
  std::snprintf(want, sizeof want, ":%04X", port);
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string sl, local, remote, state;
    f >> sl >> local >> remote >> state;
    if (state == "0A" && local.size() > 5 && local.substr(local.size() - 5) == want)
      return local.substr(0, local.size() - 5);
  }
  return "";
}

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

wire::Frame HelloWithToken(const std::string& job, int rank, int world, const std::string& token) {
  wire::Frame f = Hello(job, rank, world);
  f.mutable_hello()->set_token(token);
  return f;
}

}  // namespace

TEST_CASE("collector: TCP peers need the job token, a wrong or missing one is dropped, others intact") {
  const std::string token = "s3cret-job-token-0123456789abcdef";
  TokenEnv env(token.c_str());  // from the variable, not --token
  TempDir tmp;
  const std::string out = tmp.path + "/out";
  Collector col(tmp, {"--linger-ms", "50", "--out", out, "--listen-tcp", ":0"});
  const uint16_t port = TcpAddress(col).second;

  Client good(Client::Tcp{port});
  good.Send(HelloWithToken("job-tcp", 0, 2, token));
  good.SendBatch(SomeWork(2));
  Client local(col.sock);  // a Unix-socket peer: the uid check, no token
  local.Send(Hello("job-tcp", 1, 2));
  local.SendBatch(SomeWork(4));

  // Same length, last byte differs: a comparison that stops early would still refuse it,
  // but one that compared only a prefix would not.
  std::string wrong = token;
  wrong.back() = 'X';
  Client bad(Client::Tcp{port});
  bad.Send(HelloWithToken("job-tcp", 5, 2, wrong));
  bad.SendBatch(SomeWork(7));
  Client prefix(Client::Tcp{port});
  prefix.Send(HelloWithToken("job-tcp", 6, 2, token.substr(0, 8)));
  Client missing(Client::Tcp{port});
  missing.Send(Hello("job-tcp", 7, 2));
  missing.SendBatch(SomeWork(7));
  CHECK(bad.WaitDropped());
  CHECK(prefix.WaitDropped());
  CHECK(missing.WaitDropped());

  good.SendBatch(SomeWork(1));
  for (Client* c : {&good, &local}) {
    c->Goodbye();
    c->Close();
  }
  const json s = ReadSummary(out);
  REQUIRE(s["ranks"].size() == 2);  // ranks 5, 6, 7 never got in
  CHECK(s["ranks"][0]["rank"] == 0);
  CHECK(s["ranks"][0]["ended"] == "normal");
  CHECK(s["ranks"][0]["sync"]["by_api"]["cudaStreamSynchronize"]["count"] == 3);
  CHECK(s["ranks"][0]["memcpy"]["h2d"]["count"] == 2);
  CHECK(s["ranks"][1]["sync"]["by_api"]["cudaStreamSynchronize"]["count"] == 4);
  CHECK(col.Stop() == 0);

  const std::string log = col.Stderr();
  INFO(log);
  CHECK(Count(log, "wrong job token") == 2);
  CHECK(Count(log, "no job token in its Hello") == 1);
  CHECK_THAT(log, Catch::Contains("dropped TCP peer 127.0.0.1:"));
  // The secret is nowhere on disk or in the log: the journal holds the Hello without it.
  CHECK(log.find(token) == std::string::npos);
  const std::string journal = Slurp(out + "/.gpuwatch/rank-0-1000.frames");
  CHECK(journal.find("job-tcp") != std::string::npos);
  CHECK(journal.find(token) == std::string::npos);
  CHECK(Slurp(out + "/summary.json").find(token) == std::string::npos);
}

TEST_CASE("collector: --listen-tcp binds loopback unless an address is given") {
  TokenEnv env(nullptr);
  for (const char* spec : {":0", "0", "0.0.0.0:0"}) {
    DYNAMIC_SECTION(spec) {
      TempDir tmp;
      Collector col(tmp, {"--listen-tcp", spec, "--token", "t0ken-from-the-command-line"});
      const auto [host, port] = TcpAddress(col);
      const bool any = std::string(spec) == "0.0.0.0:0";
      CHECK(host == (any ? "0.0.0.0" : "127.0.0.1"));
      CHECK(port != 0);
      // What the kernel has, not only what the log says.
      CHECK(KernelListenAddress(port) == (any ? "00000000" : "0100007F"));
      // --token works as well as the variable.
      Client good(Client::Tcp{port});
      good.Send(HelloWithToken("job-bind", 0, 1, "t0ken-from-the-command-line"));
      good.Goodbye();
      good.Close();
      CHECK(col.Stop() == 0);
      CHECK_THAT(col.Stdout(), Catch::Contains("gpuwatch summary: job job-bind"));
    }
  }
}

TEST_CASE("collector: TCP without a token, or a bad address, is one clear error at start") {
  TokenEnv env(nullptr);
  struct Case {
    std::vector<std::string> args;
    const char* says;
  };
  for (const Case& c : {Case{{"--listen-tcp", ":0"}, "--listen-tcp needs the job token"},
                        Case{{"--listen-tcp", "localhost:http", "--token", "x"}, "no valid port"},
                        Case{{"--listen-tcp", "127.0.0.1:70000", "--token", "x"}, "no valid port"}}) {
    DYNAMIC_SECTION(c.args[1]) {
      TempDir tmp;
      Collector col(tmp, c.args);
      CHECK(col.WaitExit() == 1);
      const std::string log = col.Stderr();
      INFO(log);
      CHECK_THAT(log, Catch::Contains(c.says));
      CHECK(Count(log, "\n") == 1);  // one line
      CHECK(log.find("listening on") == std::string::npos);
    }
  }
}

TEST_CASE("collector: host:port parsing and the token comparison") {
  namespace w = gpuwatch::wire;
  w::HostPort hp;
  std::string error;
  REQUIRE(w::ParseHostPort("10.0.0.5:4242", &hp, &error));
  CHECK((hp.host == "10.0.0.5" && hp.port == 4242));
  REQUIRE(w::ParseHostPort(":4242", &hp, &error));
  CHECK((hp.host == "127.0.0.1" && hp.port == 4242));
  REQUIRE(w::ParseHostPort("4242", &hp, &error));
  CHECK((hp.host == "127.0.0.1" && hp.port == 4242));
  REQUIRE(w::ParseHostPort("[::1]:7", &hp, &error));
  CHECK((hp.host == "::1" && hp.port == 7));
  CHECK(w::FormatHostPort(hp) == "[::1]:7");
  for (const char* bad : {"", "host:", "host:65536", "host:12a", "::1:7", "[::1]7", "[::1"})
    CHECK_FALSE(w::ParseHostPort(bad, &hp, &error));

  using gpuwatch::collector::TokenEquals;
  CHECK(TokenEquals("abcdef", "abcdef"));
  CHECK_FALSE(TokenEquals("abcdeX", "abcdef"));
  CHECK_FALSE(TokenEquals("abc", "abcdef"));
  CHECK_FALSE(TokenEquals("abcdefg", "abcdef"));
  CHECK_FALSE(TokenEquals("", "abcdef"));
  CHECK_FALSE(TokenEquals("", ""));  // no token configured never means "anyone"
}

TEST_CASE("collector: the socket directory is made with its parents, private, and a bad one is one clear error") {
  namespace w = gpuwatch::wire;
  char tmpl[] = "/tmp/gw-sockdir-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string base = tmpl;
  const char* before = std::getenv("GPUWATCH_SOCKET_DIR");
  const std::string saved = before ? before : "";
  std::string error;

  const std::string nested = base + "/a/b/sock";
  setenv("GPUWATCH_SOCKET_DIR", nested.c_str(), 1);
  CHECK(w::SocketDir(&error) == nested);
  CHECK(w::CollectorSocketPath(&error) == nested + "/collector.sock");
  struct stat st {};
  REQUIRE(stat(nested.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);

  const std::string file = base + "/file";
  FILE* f = std::fopen(file.c_str(), "w");
  REQUIRE(f != nullptr);
  std::fclose(f);
  setenv("GPUWATCH_SOCKET_DIR", (file + "/sock").c_str(), 1);
  CHECK(w::SocketDir(&error).empty());
  CHECK(error == "cannot create " + file + "/sock: Not a directory");

  if (before) setenv("GPUWATCH_SOCKET_DIR", saved.c_str(), 1); else unsetenv("GPUWATCH_SOCKET_DIR");
  std::filesystem::remove_all(base);
}
