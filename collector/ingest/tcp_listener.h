// TCP for ranks on other hosts, only when asked (--listen-tcp). A TCP peer has no
// credentials the kernel can vouch for (SO_PEERCRED is a Unix-socket thing), so every TCP
// connection must carry the job token in its Hello; the check lives in Connection.
#pragma once
#include <string>
#include <string_view>

#include "endpoint.h"

namespace gpuwatch::collector {

// Binds and listens on `where` (non-blocking, close-on-exec). `bound` gets the address
// actually bound, with the port the kernel picked when `where.port` is 0. Returns the fd,
// or -1 with `error` set to one line.
int ListenTcp(const wire::HostPort& where, std::string* bound, std::string* error);

// "ADDR:PORT" of the connected peer of `fd`, "?" if the kernel cannot say.
std::string TcpPeerAddress(int fd);

// The same bytes? Takes a time that depends only on the lengths, never on where the first
// difference is, so a peer cannot find the token one byte at a time by timing refusals.
bool TokenEquals(std::string_view given, std::string_view expected);

// Kernel socket buffers of TCP connections, each side. The library keeps the last 4 MiB it
// sent to spool them again if the collector dies (outbox.h); with both buffers capped
// (the kernel doubles the value asked) less than that is ever in flight.
inline constexpr int kTcpSocketBuffer = 512 * 1024;

}  // namespace gpuwatch::collector
