// doctest helpers of the checkpoint tests: temporary directories and state comparisons.
#pragma once

#include <filesystem>
#include <string>

#include "tests/ckpt/fixtures.h"

namespace ember::ckpt::testing {

// A fresh directory under the system's temporary directory, removed with its contents at the end.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// Checks (doctest CHECKs) that `state` holds exactly the reference's rows and values.
void check_matches(const RankState& state, const Reference& reference);

}  // namespace ember::ckpt::testing
