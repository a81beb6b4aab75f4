// Points EMBER_CACHE_DIR at a fresh temp directory for one test and restores the old value, so
// cache tests neither read the user's cache nor leave entries behind.
#pragma once

#include <doctest/doctest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

namespace ember::graph_test {

class ScopedCacheDir {
 public:
  ScopedCacheDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "ember-cache-test-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
    if (const char* old = std::getenv("EMBER_CACHE_DIR")) old_ = old;
    ::setenv("EMBER_CACHE_DIR", path_.c_str(), 1);
  }
  ~ScopedCacheDir() {
    if (old_) ::setenv("EMBER_CACHE_DIR", old_->c_str(), 1);
    else ::unsetenv("EMBER_CACHE_DIR");
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScopedCacheDir(const ScopedCacheDir&) = delete;
  ScopedCacheDir& operator=(const ScopedCacheDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::optional<std::string> old_;
};

}  // namespace ember::graph_test
