// Chrome-trace times to integer ns, exact where a double is not.
#include <catch2/catch.hpp>

#include "import/timestamp.h"

using gpuwatch::collector::MicrosTextToNs;

TEST_CASE("collector: import times are converted from the number's text, exact to the ns") {
  uint64_t ns = 0;
  REQUIRE(MicrosTextToNs("1712195495505543.2", &ns));
  // As a double this would be 1712195495505543.25 * 1000 ~ not representable exactly.
  CHECK(ns == 1712195495505543200ull);
  REQUIRE(MicrosTextToNs("4458676522690.655", &ns));
  CHECK(ns == 4458676522690655ull);
  REQUIRE(MicrosTextToNs("12", &ns));
  CHECK(ns == 12000);
  REQUIRE(MicrosTextToNs("0.0015", &ns));  // below a ns: truncated
  CHECK(ns == 1);
  CHECK_FALSE(MicrosTextToNs("-1.5", &ns));
  CHECK_FALSE(MicrosTextToNs("1e3", &ns));
  CHECK_FALSE(MicrosTextToNs("", &ns));
  CHECK_FALSE(MicrosTextToNs("99999999999999999999", &ns));
  CHECK_FALSE(MicrosTextToNs("18446744073709551.999", &ns));
}
