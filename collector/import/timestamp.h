// Chrome-trace times are microseconds, written as integers or decimals ("1712195495505583.0",
// "4458676522690.655"). Epoch times in ns exceed a double's 53-bit mantissa, so the number's
// text is converted to integer nanoseconds digit by digit: exact to the ns the trace wrote.
#pragma once
#include <cstdint>
#include <string_view>

namespace gpuwatch::collector {

// False for a negative number, an exponent, or one beyond uint64 ns.
bool MicrosTextToNs(std::string_view text, uint64_t* ns);

}  // namespace gpuwatch::collector
