// How a Python frame ("file:line in function", as the library reads it) is classified, in
// one place for call sites and host samples (issue 16): the framework (torch, installed
// packages, the standard library) is skipped to the user's code, and DataLoader iteration
// is told apart from other host work.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace gpuwatch::collector {

// A frame of torch, of an installed package (site-packages, dist-packages) or of the
// standard library (…/lib/python3.X/…, <frozen …>).
bool IsFrameworkFrame(std::string_view where);

// `where` with its file cut to its last two path parts, for sentences:
// "/home/u/proj/train.py:42 in step" -> "proj/train.py:42 in step".
std::string ShortWhere(std::string_view where);

// The innermost frame outside the framework (stack innermost first); the innermost frame
// when every one is the framework's; empty for an empty stack.
std::string UserFrame(const std::vector<std::string>& stack);

// A sample with no frame to name, Python or native (no stack read, or an empty one): what
// the views show for it, and how they tell it from a frame that names code.
inline constexpr std::string_view kNoFrame = "(no frame)", kNoPythonFrame = "(no Python frame)";
inline bool IsNoFrame(std::string_view where) { return where == kNoFrame || where == kNoPythonFrame; }

// The thread is iterating a DataLoader: a frame of torch/utils/data, or a worker queue's
// get (multiprocessing's queues or connection, queue.Queue.get) under one.
bool IsDataLoading(const std::vector<std::string>& stack);

}  // namespace gpuwatch::collector
