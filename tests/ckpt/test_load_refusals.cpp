// load() refuses a live tensor it cannot write correctly, before writing anything: an expanded one
// (several elements at one address) used to be written element by element, the last row winning.
#include <doctest/doctest.h>

#include "ckpt/load.h"
#include "ckpt/writer.h"
#include "runtime/ember.h"
#include "tests/ckpt/helpers.h"
#include "tests/error_of.h"

namespace ember::ckpt::test_load_refusals {
namespace {

TEST_CASE("load refusals: an expanded live tensor is refused like copy_ refuses it, nothing changed") {
  testing::TempDir root;
  RankState saved;
  saved.add_replicated("v", from_vector(std::vector<float>{5, 6, 7}, {3}, {.device = kCPU}));
  saved.add_replicated("w", from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2}, {.device = kCPU}));
  SingleRank single;
  const std::filesystem::path directory = save(single, saved, {.root = root.path(), .name = "a", .durable = false});

  const Tensor base = zeros({1, 2}, {.device = kCPU});
  const Tensor other = zeros({3}, {.device = kCPU});
  RankState live;
  live.add_replicated("v", other);  // loadable, but the load as a whole fails
  live.add_replicated("w", base.expand({2, 2}));
  CHECK(ember::testing::error_of([&] { load(single, directory, live); }) ==
        "checkpoint " + directory.string() + ": entry 'w': the live tensor (shape [2, 2], strides [0, 1]) is "
        "expanded: several of its elements share one address, so it cannot be loaded into; clone() it first");
  CHECK(base.data_ptr<float>()[0] == 0.0f);
  CHECK(base.data_ptr<float>()[1] == 0.0f);
  for (int i = 0; i < 3; ++i) CHECK(other.data_ptr<float>()[i] == 0.0f);

  // The same tensor cloned loads.
  RankState cloned;
  cloned.add_replicated("w", base.expand({2, 2}).clone());
  load(single, directory, cloned);
  const Tensor loaded = cloned.tensor("w").tensor;
  CHECK(std::vector<float>(loaded.data_ptr<float>(), loaded.data_ptr<float>() + 4) ==
        std::vector<float>{1, 2, 3, 4});
}

}  // namespace
}  // namespace ember::ckpt::test_load_refusals
