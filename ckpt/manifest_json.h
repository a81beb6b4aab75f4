// Internal to the manifest code: the sealed text's trailer and the exact spelling of float64s.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ember::ckpt {

// A sealed manifest ends with kChecksumPrefix, 16 hex digits, kChecksumSuffix; the digits are the
// XXH3-64 of everything before kChecksumPrefix.
constexpr std::string_view kChecksumPrefix = ",\n\"manifest_checksum\": \"";
constexpr std::string_view kChecksumSuffix = "\"\n}\n";

// float64 values are hex-float strings ("0x1.999999999999ap-4", "inf", "-nan"): exact, and
// readable by Python's float.fromhex. parse_float64 takes exactly the spellings float.fromhex and
// tools/ckpt_manifest.py take, rounded as they round (manifest_float.cpp); nullopt otherwise.
std::string format_float64(double value);
std::optional<double> parse_float64(std::string_view text);

}  // namespace ember::ckpt
