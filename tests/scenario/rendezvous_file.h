// Hand a small blob (the ncclUniqueId) from rank 0 to the other ranks through a file.
//
// A file in a private directory works on one machine with the simulator and with real NCCL
// alike, needs no sockets, and cannot be read half-written: the writer writes NAME.tmp and
// renames it, and rename() is atomic within a directory.
#pragma once

#include <string>
#include <vector>

namespace gpuwatch::scenario {

// Writes dir/name atomically. Throws std::runtime_error on failure.
void publish_blob(const std::string& dir, const std::string& name, const void* data, size_t size);

// Removes dir/name, then dir if that left it empty; quietly, since a leftover only costs a
// file in a temporary directory.
void unpublish_blob(const std::string& dir, const std::string& name);

// Polls for dir/name until it exists with exactly `size` bytes or `timeout_s` passes.
// Throws std::runtime_error (message names the file and the timeout) on timeout.
std::vector<char> wait_blob(const std::string& dir, const std::string& name, size_t size, double timeout_s);

}  // namespace gpuwatch::scenario
