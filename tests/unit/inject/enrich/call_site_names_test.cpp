// Call sites symbolized on the sender thread: frames named "symbol+0xoff (object)".
#include <catch2/catch.hpp>

#include "enrich/call_site_names.h"
#include "record/call_sites.h"

namespace gi = gpuwatch::inject;

namespace {
__attribute__((noinline)) uint32_t Site() {
  const uint32_t id = gi::CaptureCallSite();
  asm volatile("" ::: "memory");  // a call, not a tail call: this frame is the hook's
  return id;
}
}  // namespace

TEST_CASE("call site names: a captured site is described by its frames, an unknown one is not") {
  const uint32_t id = Site();
  REQUIRE(id != 0);
  gi::CallSiteText t;
  REQUIRE(gi::DescribeCallSite(id, &t));
  REQUIRE_FALSE(t.frames.empty());
  CHECK(t.frames.size() <= 16);
  for (const std::string& f : t.frames) CHECK(f.find("+0x") != std::string::npos);  // "symbol+0x1c (object)"
  CHECK(t.python.empty());
  CHECK_FALSE(gi::DescribeCallSite(0, &t));
  CHECK_FALSE(gi::DescribeCallSite(gi::kMaxCallSites + 1, &t));
}
