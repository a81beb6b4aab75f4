// float64 values of the manifest: exact hex-float text, read with the grammar and rounding of
// Python's float.fromhex (FORMAT.md), so that the C++ reader and tools/ckpt_read.py agree.
#include <locale.h>
#include <stdlib.h>

#include <cmath>

#include "ckpt/manifest_json.h"
#include "runtime/error.h"

namespace ember::ckpt {

std::string format_float64(double value) { return fmt::format("{:a}", value); }

namespace {

bool is_hex_digit(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// What follows "0x" in Python's float.fromhex spelling: hex digits with at most one '.' (at least
// one digit), then optionally 'p' or 'P', an optional sign and decimal digits. No sign, "inf" or
// "nan" after the 0x (std::from_chars and strtod would take those).
bool is_hex_float_body(std::string_view text) {
  size_t at = 0, digits = 0;
  for (; at < text.size() && is_hex_digit(text[at]); ++at) ++digits;
  if (at < text.size() && text[at] == '.')
    for (++at; at < text.size() && is_hex_digit(text[at]); ++at) ++digits;
  if (digits == 0) return false;
  if (at == text.size()) return true;
  if (text[at] != 'p' && text[at] != 'P') return false;
  ++at;
  if (at < text.size() && (text[at] == '+' || text[at] == '-')) ++at;
  if (at == text.size()) return false;
  for (; at < text.size(); ++at)
    if (!is_digit(text[at])) return false;
  return true;
}

}  // namespace

std::optional<double> parse_float64(std::string_view text) {
  bool negative = !text.empty() && text[0] == '-';
  if (negative) text.remove_prefix(1);
  double magnitude;
  if (text == "inf") magnitude = INFINITY;
  else if (text == "nan") magnitude = NAN;
  else {
    if (!text.starts_with("0x") || !is_hex_float_body(text.substr(2))) return std::nullopt;
    // strtod rounds to nearest like float.fromhex, also into the subnormals and to 0, where
    // std::from_chars refuses a result that underflows to 0. The C locale: a '.' is the point.
    static const locale_t c_locale = ::newlocale(LC_ALL_MASK, "C", nullptr);
    internal_assert(c_locale != nullptr, "newlocale(LC_ALL_MASK, \"C\") failed");
    const std::string terminated(text);
    char* end = nullptr;
    magnitude = ::strtod_l(terminated.c_str(), &end, c_locale);
    if (end != terminated.c_str() + terminated.size() || std::isinf(magnitude)) return std::nullopt;  // overflow
  }
  return negative ? -magnitude : magnitude;
}

}  // namespace ember::ckpt
