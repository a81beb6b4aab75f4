// The on-disk cache of compiled kernels (generated CPU libraries, NVRTC output), shared by all
// processes of a user: entries are content-addressed and published atomically.
#pragma once

#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace ember::graph::cache {

// EMBER_CACHE_DIR, default ~/.cache/ember (created).
std::filesystem::path directory();
// 32 hex digits of a hash of all parts: source, compiler identity, flags, target.
std::string key(std::initializer_list<std::string_view> parts);
// The entry's final path: directory()/<kind>/<key><extension>; exists() => complete.
std::filesystem::path entry(std::string_view kind, const std::string& key, std::string_view extension);
// Atomically publishes `bytes` (temp file in the same dir + fsync + rename).
void publish(const std::filesystem::path& entry, std::string_view bytes);
// Publishes an already written temp file by rename (e.g. a .so the compiler wrote).
void publish_file(const std::filesystem::path& temp, const std::filesystem::path& entry);
std::optional<std::string> read(const std::filesystem::path& entry);

}  // namespace ember::graph::cache
