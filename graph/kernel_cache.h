// The on-disk cache of compiled kernels (cubins, PTX, host .so files): content-addressed entries
// under EMBER_CACHE_DIR (default ~/.cache/ember), published atomically so processes may share it.
#pragma once

#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace ember::graph::cache {

// The cache root: $EMBER_CACHE_DIR if set and non-empty, else $HOME/.cache/ember, else (no HOME)
// /tmp/ember-cache-<uid>. Created on first use; throws ember::Error naming the path when it cannot
// be created or is not a writable directory.
std::filesystem::path directory();

// 32 lowercase hex digits: xxHash3-128 of all parts (source, compiler identity, flags, target).
// Each part is length-prefixed, so {"ab", "c"} and {"a", "bc"} give different keys.
std::string key(std::initializer_list<std::string_view> parts);

// The entry's final path: directory()/<kind>/<key><extension>. Creates directory()/<kind>.
// An entry that exists is complete: writers only ever rename finished files into place.
std::filesystem::path entry(std::string_view kind, const std::string& key,
                            std::string_view extension);

// Atomically publishes `bytes` at `entry`: a uniquely named temp file in the same directory is
// written, fsynced and renamed over the entry. Concurrent publishers of the same key (threads or
// processes) are safe since they publish the same content; readers never see a partial file.
void publish(const std::filesystem::path& entry, std::string_view bytes);

// Publishes an already written file (e.g. a .so a compiler wrote) by fsync + rename. `temp` must
// be on the same file system as `entry`; make it with temp_path(entry) to be sure.
void publish_file(const std::filesystem::path& temp, const std::filesystem::path& entry);

// A fresh temp path beside `entry` (same directory, unique per process, thread and call), for
// tools that write the file themselves before publish_file. Stale temps from crashed writers are
// harmless: they never carry an entry's name.
std::filesystem::path temp_path(const std::filesystem::path& entry);

// The entry's bytes, or nullopt when it does not exist. Throws ember::Error naming the path when
// it exists but cannot be read.
std::optional<std::string> read(const std::filesystem::path& entry);

}  // namespace ember::graph::cache
