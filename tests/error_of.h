// error_of(body): runs body, expects it to throw ember::Error, and returns the message, so a test
// can check what the error names (the op, the values, the call site). No error fails the case.
#pragma once

#include <doctest/doctest.h>

#include <fmt/format.h>

#include <source_location>
#include <string>
#include <string_view>
#include <vector>

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

// `message` holds `expected` and names line `line` of the calling test file.
inline void check_refusal(const std::string& message, std::string_view expected, int line,
                              std::source_location caller = std::source_location::current()) {
  INFO(message);
  CHECK(message.find(expected) != std::string::npos);
  CHECK(names_line(message, line, caller));
}

// For a list of error_of calls written one per line from `first_line` on: message i holds
// expected[i] and names line first_line + i of the calling test file.
inline void check_messages_name_lines(const std::vector<std::string>& messages,
                                      const std::vector<std::string>& expected, int first_line,
                                      std::source_location caller = std::source_location::current()) {
  REQUIRE(messages.size() == expected.size());
  for (size_t i = 0; i < messages.size(); ++i) {
    INFO(messages[i]);
    CHECK(messages[i].find(expected[i]) != std::string::npos);
    CHECK(names_line(messages[i], first_line + static_cast<int>(i), caller));
  }
}

}  // namespace ember::testing
