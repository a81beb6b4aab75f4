// libFuzzer target: the checkpoint manifest parser and validator on arbitrary bytes. Every input
// must either parse or raise ember::Error; anything else (a crash, a sanitizer report, another
// exception type) is a bug. What parses must serialize and parse back to the same text.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ckpt/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember::ckpt;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    (void)parse_manifest(text, "fuzz");  // the seal check, then everything else
  } catch (const ember::Error&) {
  }
  // Mutated input almost never carries a valid seal, so fuzz the structural checks without it.
  Manifest manifest;
  try {
    manifest = parse_manifest(text, "fuzz", {.verify_checksum = false});
  } catch (const ember::Error&) {
    return 0;
  }
  const std::string sealed = serialize_manifest(manifest);
  const Manifest again = parse_manifest(sealed, "fuzz round trip");
  if (serialize_manifest(again) != sealed) __builtin_trap();
  return 0;
}
