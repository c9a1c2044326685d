// The handshake and framing rules of a connection, and the socket-claiming rules.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>

#include "fixtures.h"
#include "ingest/listener.h"

using namespace gwtest;

namespace {

struct Raw {
  explicit Raw(col::JobTable& jobs) : conn(77, jobs, col::Clock::now()) {}
  bool Send(const std::string& s) { return conn.OnBytes(s, scratch, col::Clock::now()); }
  wire::FrameScratch scratch;
  col::Connection conn;
};

}  // namespace

TEST_CASE("collector: a wrong protocol version is refused with a clear reason") {
  col::JobTable jobs(col::JobTiming{});
  Raw c(jobs);
  CHECK_FALSE(c.Send(Bytes(Hello("j", 3, 4, /*version=*/2))));
  CHECK(c.conn.error() == "rank 3 (pid 77) speaks protocol 2, this collector speaks 1");
  CHECK(jobs.empty());
}

TEST_CASE("collector: the first frame must be a Hello") {
  col::JobTable jobs(col::JobTiming{});
  Raw c(jobs);
  wire::Frame f;
  f.mutable_batch();
  CHECK_FALSE(c.Send(Bytes(f)));
  CHECK_THAT(c.conn.error(), Catch::Contains("not a Hello"));
}

TEST_CASE("collector: garbage, oversized frames and a second Hello are errors") {
  col::JobTable jobs(col::JobTiming{});
  {
    Raw c(jobs);
    CHECK_FALSE(c.Send(std::string("\x05\xff\xff\xff\xff\xff", 6)));
    CHECK_THAT(c.conn.error(), Catch::Contains("does not decode"));
  }
  {
    Raw c(jobs);
    // Length 100 MiB as a varint: refused before anything is allocated for it.
    std::string s;
    uint64_t v = 100u << 20;
    while (v >= 0x80) {
      s.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    s.push_back(static_cast<char>(v));
    CHECK_FALSE(c.Send(s));
    CHECK_THAT(c.conn.error(), Catch::Contains("exceeds the limit"));
  }
  {
    Raw c(jobs);
    REQUIRE(c.Send(Bytes(Hello("j", 0, 1))));
    CHECK_FALSE(c.Send(Bytes(Hello("j", 0, 1))));
    CHECK_THAT(c.conn.error(), Catch::Contains("second Hello"));
    CHECK(c.conn.Describe() == "rank 0 of job j (pid 77)");
  }
}

TEST_CASE("collector: frames split at any byte boundary are reassembled") {
  col::JobTable jobs(col::JobTiming{});
  Raw c(jobs);
  wire::Frame f;
  Add(f.mutable_batch(), wire::CUDA_DEVICE_SYNCHRONIZE, 5, 7);
  const std::string all = Bytes(Hello("j", 0, 1)) + Bytes(f) + Bytes(f);
  for (char ch : all) REQUIRE(c.Send(std::string(1, ch)));
  c.conn.Close(col::Clock::now());
  CHECK(jobs.Find("j")->ranks().begin()->second->result().host_calls == 2);
}

TEST_CASE("collector: hello strings are clipped") {
  auto f = Hello(std::string(1000, 'x'), 0, 1);
  f.mutable_hello()->set_host(std::string(5000, 'h'));
  col::SanitizeHello(*f.mutable_hello());
  CHECK(f.hello().job_id().size() == 256);
  CHECK(f.hello().host().size() == 256);
}

TEST_CASE("collector: peers of another uid are refused") {
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  col::Peer p;
  REQUIRE(col::PeerOf(sv[0], &p));
  CHECK(p.pid == getpid());
  CHECK(col::PeerAllowed(p, geteuid()));
  CHECK_FALSE(col::PeerAllowed(p, geteuid() + 1));
  close(sv[0]);
  close(sv[1]);
}

TEST_CASE("collector: the socket is 0600, a live one is not taken, a stale one is replaced") {
  char tmpl[] = "/tmp/gwcol-XXXXXX";
  REQUIRE(mkdtemp(tmpl));
  const std::string dir = tmpl;
  const std::string path = dir + "/collector.sock";
  std::string err;

  const int fd = col::ListenUnix(path, &err);
  REQUIRE(fd >= 0);
  struct stat st {};
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);

  CHECK(col::ListenUnix(path, &err) == -1);
  CHECK_THAT(err, Catch::Contains("already listening"));

  close(fd);  // the socket file stays: stale
  const int fd2 = col::ListenUnix(path, &err);
  CHECK(fd2 >= 0);
  close(fd2);

  const std::string plain = dir + "/not-a-socket";
  close(open(plain.c_str(), O_CREAT | O_WRONLY, 0600));
  CHECK(col::ListenUnix(plain, &err) == -1);
  CHECK_THAT(err, Catch::Contains("not a socket"));
  std::filesystem::remove_all(dir);
}
