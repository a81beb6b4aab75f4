// error_of(body): runs body, expects it to throw ember::Error, and returns the message, so a test
// can check what the error names (the op, the values, the call site). No error fails the case.
#pragma once

#include <doctest/doctest.h>

#include <fmt/format.h>

#include <source_location>
#include <string>
#include <string_view>

#include "runtime/error.h"

namespace ember::testing {

template <typename Body>
std::string error_of(Body&& body) {
  try {
    body();
  } catch (const Error& error) {
    return error.what();
  }
  FAIL("expected ember::Error");
  return "";
}

// True when `message` names line `line` of the calling test file, as CallSite::describe prints a
// call site (the file's base name, then the line).
inline bool names_line(const std::string& message, int line,
                       std::source_location caller = std::source_location::current()) {
  std::string_view file = caller.file_name();
  file.remove_prefix(file.rfind('/') == std::string_view::npos ? 0 : file.rfind('/') + 1);
  return message.find(fmt::format("{}:{}", file, line)) != std::string::npos;
}

}  // namespace ember::testing
