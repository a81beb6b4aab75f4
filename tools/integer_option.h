// A CLI11 validator for the integer options of ember's command-line tools (ember-bench,
// ember-ckpt): one readable message for text that is not an integer or is out of range.
#pragma once

#include <CLI/CLI.hpp>
#include <charconv>
#include <limits>
#include <string>

#include <fmt/format.h>

namespace ember::tools {

// Accepts decimal integers from `lowest` to `highest` and nothing else: "--steps: expected an
// integer from 1 to 10000000, got '0'". CLI11's PositiveNumber prints its range as a 300-digit
// double for "0" and "abc" alike, and CLI11 converts "-5" for an unsigned option to 2^64 - 5;
// std::from_chars takes no sign for an unsigned type, no spaces and no trailing text. Add it with
// ->transform(), not ->check(): a check's rewrite of the text is thrown away.
template <typename Integer>
CLI::Validator integer_in(Integer lowest, Integer highest = std::numeric_limits<Integer>::max()) {
  const std::string wanted = highest == std::numeric_limits<Integer>::max()
                                 ? fmt::format("an integer >= {}", lowest)
                                 : fmt::format("an integer from {} to {}", lowest, highest);
  return CLI::Validator(
      [lowest, highest, wanted](std::string& text) -> std::string {
        Integer value{};
        const char* end = text.data() + text.size();
        const auto [stop, error] = std::from_chars(text.data(), end, value);
        if (error == std::errc() && stop == end && value >= lowest && value <= highest) {
          // CLI11 converts the text again with strtoll(text, 0), which reads "010" as octal 8:
          // hand it the value checked here, in plain decimal.
          text = std::to_string(value);
          return "";
        }
        return fmt::format("expected {}, got '{}'", wanted, text);
      },
      highest == std::numeric_limits<Integer>::max() ? fmt::format(">= {}", lowest)
                                                      : fmt::format("{} to {}", lowest, highest));
}

}  // namespace ember::tools
