// doctest helpers of the checkpoint tests.
#include "tests/ckpt/helpers.h"

#include <doctest/doctest.h>
#include <stdlib.h>

namespace ember::ckpt::testing {

namespace fs = std::filesystem;

TempDir::TempDir() {
  std::string pattern = (fs::temp_directory_path() / "ember-ckpt-test-XXXXXX").string();
  REQUIRE(::mkdtemp(pattern.data()) != nullptr);
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

void check_matches(const RankState& state, const Reference& reference) {
  for (const auto& [name, local] : state.tensors()) {
    const RowRange rows = local.rows();
    const Tensor& full = reference.tensors.at(name);
    const Tensor expected = full.dim() == 0 ? full : full.narrow(0, rows.begin, rows.size());
    CHECK_MESSAGE(same_bytes(local.tensor, expected), name);
  }
  for (const auto& [name, value] : state.values()) CHECK_MESSAGE(same_value(value, reference.values.at(name)), name);
}

}  // namespace ember::ckpt::testing
