#include "common/kernel_names.h"

#include <cxxabi.h>

#include <cctype>
#include <cstdlib>
#include <utility>

#include "common/format.h"

namespace gpuwatch::collector {
namespace {

constexpr std::string_view kEllipsis = "\xe2\x80\xa6";  // U+2026, one character

bool IsNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }

// Every outermost template argument list becomes "<…>". A '<' opens one only right after
// a C++ name; "operator<", "operator<<" and "operator<=" are names, and "->" inside the
// arguments closes nothing.
std::string CollapseTemplates(std::string_view s) {
  std::string out;
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (depth > 0) {
      if (c == '<') ++depth;
      else if (c == '>' && s[i - 1] != '-') --depth;
      continue;
    }
    if (c == '<' && EndsWith(out, "operator")) {
      out += c;
      if (i + 1 < s.size() && (s[i + 1] == '<' || s[i + 1] == '=')) out += s[++i];
    } else if (c == '<' && !out.empty() && IsNameChar(out.back())) {
      depth = 1;
      out += "<";
      out += kEllipsis;
      out += ">";
    } else {
      out += c;
    }
  }
  return out;
}

// A function's trailing parameter list ("(int, float*)", maybe followed by " const")
// becomes "(…)"; a group after a space is not one: a native frame's module ("read_input(int)
// (app)") stays, and the function before it is collapsed.
std::string CollapseParameters(std::string s) {
  if (s.size() > 2 && s.back() == ')') {
    const size_t open = s.rfind(" (");
    if (open != std::string::npos && open > 0 && s.find_first_of("()", open + 2) == s.size() - 1)
      return CollapseParameters(s.substr(0, open)) + s.substr(open);
  }
  const size_t close = s.rfind(')');
  if (close == std::string::npos) return s;
  const std::string_view tail = std::string_view(s).substr(close + 1);
  if (!tail.empty() && tail != " const" && tail != " const &" && tail != " &" && tail != " &&") return s;
  int depth = 0;
  for (size_t i = close + 1; i-- > 0;) {
    if (s[i] == ')') ++depth;
    else if (s[i] == '(' && --depth == 0) {
      if (i == 0 || s[i - 1] == ' ' || close == i + 1) return s;  // "(no frame)", "f()"
      return s.substr(0, i + 1) + std::string(kEllipsis) + s.substr(close);
    }
  }
  return s;
}

// Cut to `max_chars` characters (UTF-8 code points), the last one an ellipsis.
std::string CapChars(std::string s, size_t max_chars) {
  size_t chars = 0, cut = std::string::npos;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xc0) == 0x80) continue;  // inside a code point
    if (chars == (max_chars ? max_chars - 1 : 0)) cut = i;
    if (++chars > max_chars) return s.substr(0, cut) + std::string(kEllipsis);
  }
  return s;
}

// The name's own parts read straight from its mangled form: "_ZN7cutlass6KernelI…" ->
// "cutlass::Kernel<…>(…)". For names __cxa_demangle refuses: libstdc++'s gives up on names
// over about a kilobyte, and CUTLASS's reach four. Empty when the form is not one it reads.
std::string NameFromMangledPrefix(std::string_view m) {
  size_t i = 2;  // after "_Z"
  const bool nested = i < m.size() && m[i] == 'N';
  if (nested) ++i;
  while (nested && i < m.size() && (m[i] == 'r' || m[i] == 'V' || m[i] == 'K')) ++i;  // a method's qualifiers
  std::string out;
  if (m.substr(i, 2) == "St") out = "std", i += 2;
  while (i < m.size() && std::isdigit(static_cast<unsigned char>(m[i]))) {
    size_t len = 0;
    while (i < m.size() && std::isdigit(static_cast<unsigned char>(m[i])) && len < m.size()) len = len * 10 + (m[i++] - '0');
    if (len == 0 || len > m.size() - i) return {};
    out += (out.empty() ? "" : "::") + std::string(m.substr(i, len));
    i += len;
    if (!nested) break;
  }
  if (out.empty()) return {};
  if (i < m.size() && m[i] == 'I') out += "<" + std::string(kEllipsis) + ">";
  return out + "(" + std::string(kEllipsis) + ")";
}

}  // namespace

std::string DemangleName(const std::string& name) {
  if (name.rfind("_Z", 0) != 0) return name;
  int status = 0;
  char* d = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !d) return name;
  std::string out(d);
  std::free(d);
  return out;
}

bool IsCommKernelName(const std::string& mangled) {
  if (mangled.rfind("nccl", 0) == 0) return true;
  std::string d = DemangleName(mangled);
  if (d.rfind("void ", 0) == 0) d.erase(0, 5);
  return d.rfind("nccl", 0) == 0;
}

std::string ShortName(std::string_view name, size_t max_chars) {
  std::string d = DemangleName(std::string(name));
  if (d.rfind("_Z", 0) == 0)  // not demangled
    if (std::string parts = NameFromMangledPrefix(d); !parts.empty()) return CapChars(std::move(parts), max_chars);
  if (d.rfind("void ", 0) == 0) d.erase(0, 5);
  return CapChars(CollapseParameters(CollapseTemplates(d)), max_chars);
}

}  // namespace gpuwatch::collector
