// TensorDataset, samplers and the DataLoader's ordering: coverage, drop_last, determinism across
// worker counts and epochs. Resume, errors and shutdown are in test_data_loader_state.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "runtime/data_test_helpers.h"

namespace test_data {

using namespace ember;
using namespace ember::data;
using namespace ember::data::testing;

TEST_CASE("TensorDataset gathers rows of data and target together") {
  TensorDataset dataset = numbered_dataset(10);
  CHECK(dataset.size() == 10);
  const std::vector<int64_t> indices{7, 0, 7, 3};
  Batch batch = dataset.get_batch(indices);
  CHECK(batch.data.sizes() == Dims{4, 3});
  CHECK(batch.data.to_vector<float>() == std::vector<float>{70, 71, 72, 0, 1, 2, 70, 71, 72, 30, 31, 32});
  CHECK(batch.target.to_vector<int64_t>() == std::vector<int64_t>{7, 0, 7, 3});
  Batch one = dataset.get(4);
  CHECK(one.data.sizes() == Dims{3});
  CHECK(one.data.to_vector<float>() == std::vector<float>{40, 41, 42});
  CHECK(one.target.dim() == 0);
  CHECK(one.target.item<int64_t>() == 4);
  CHECK(dataset.get_batch(std::vector<int64_t>{}).data.sizes() == Dims{0, 3});
}

TEST_CASE("TensorDataset accepts non-contiguous tensors and works without targets") {
  // columns.t() is [4, 2] with strides [1, 4]: row i is {i + 1, i + 5}.
  Tensor columns = from_vector<double>({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4}, {.dtype = kFloat64});
  TensorDataset dataset(columns.t());
  CHECK(dataset.size() == 4);
  Batch batch = dataset.get_batch(std::vector<int64_t>{3, 1});
  CHECK(batch.data.to_vector<double>() == std::vector<double>{4, 8, 2, 6});
  CHECK_FALSE(batch.target.defined());
  CHECK_FALSE(dataset.get(0).target.defined());
}

TEST_CASE("TensorDataset rejects mismatched rows and bad indices") {
  Tensor data = full({10, 3}, 1.5);
  Tensor target = full({9}, 2.0);
  CHECK_THROWS_WITH_AS(TensorDataset(data, target),
                       doctest::Contains("data [10, 3] (10 rows) and target [9] (9 rows)"), Error);
  CHECK_THROWS_WITH_AS(TensorDataset(scalar_tensor(3.0)), doctest::Contains("at least one dim"), Error);
  TensorDataset dataset = numbered_dataset(5);
  CHECK_THROWS_WITH_AS(dataset.get_batch(std::vector<int64_t>{1, 5}),
                       doctest::Contains("index 5 is out of range for 5 samples"), Error);
  CHECK_THROWS_WITH_AS(dataset.get(-1), doctest::Contains("index -1 is out of range"), Error);
}

TEST_CASE("a sampler whose list disagrees with its size is an error, not a read past the list") {
  struct Inconsistent : Sampler {
    int64_t listed;
    explicit Inconsistent(int64_t count) : listed(count) {}
    std::vector<int64_t> epoch_indices(int64_t) const override {
      std::vector<int64_t> order(static_cast<size_t>(listed));
      for (int64_t i = 0; i < listed; ++i) order[static_cast<size_t>(i)] = i;
      return order;
    }
    int64_t size() const override { return 10; }
  };
  auto dataset = std::make_shared<TensorDataset>(arange(0, 10, 1, {.device = kCPU}).view({10, 1}));
  for (const int64_t listed : {int64_t{5}, int64_t{12}}) {
    for (const int workers : {0, 2}) {
      INFO(listed, " listed, ", workers, " workers");
      DataLoader loader(dataset, std::make_shared<Inconsistent>(listed), {.batch_size = 3, .num_workers = workers});
      CHECK_THROWS_WITH_AS(
          [&] {
            for (auto& batch : loader) (void)batch;
          }(),
          doctest::Contains(fmt::format("lists {} samples but its epoch_size(0) is 10", listed).c_str()), Error);
    }
  }
}

TEST_CASE("random_permutation is a seeded permutation that differs by stream") {
  const auto first = random_permutation(1000, 5, 0);
  CHECK(first == random_permutation(1000, 5, 0));
  CHECK(first != random_permutation(1000, 5, 1));
  CHECK(first != random_permutation(1000, 6, 0));
  auto sorted = first;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 1000; ++i) REQUIRE(sorted[i] == i);
  // A shuffle moves almost everything: fixed points of a random permutation average 1.
  int64_t fixed = 0;
  for (int64_t i = 0; i < 1000; ++i) fixed += first[i] == i;
  CHECK(fixed < 10);
  CHECK(random_permutation(0, 5, 0).empty());
  CHECK(random_permutation(1, 5, 0) == std::vector<int64_t>{0});
  CHECK(SequentialSampler(4).epoch_indices(3) == std::vector<int64_t>{0, 1, 2, 3});
  CHECK(RandomSampler(50, 9).epoch_indices(2) == random_permutation(50, 9, 2));
}

TEST_CASE("the documented loop: batches of 32, shuffled, two workers") {
  DataLoader loader(numbered_dataset(100), {.batch_size = 32, .shuffle = true, .num_workers = 2});
  CHECK(loader.num_batches() == 4);
  std::vector<int64_t> sizes;
  for (auto& [x, y] : loader) sizes.push_back(y.size(0));
  CHECK(sizes == std::vector<int64_t>{32, 32, 32, 4});
  CHECK(loader.epoch() == 1);  // a full pass is an epoch
}

TEST_CASE("every sample appears exactly once per epoch") {
  for (bool shuffle : {false, true}) {
    DataLoader loader(numbered_dataset(10), {.batch_size = 4, .shuffle = shuffle, .seed = 3});
    for (int epoch = 0; epoch < 3; ++epoch) {
      const auto batches = one_epoch(loader);
      REQUIRE(batches.size() == 3);
      CHECK(batches[2].size() == 2);
      auto all = flatten(batches);
      if (!shuffle) CHECK(all == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
      std::sort(all.begin(), all.end());
      CHECK(all == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
    }
  }
}

TEST_CASE("drop_last drops the short final batch") {
  DataLoader loader(numbered_dataset(10), {.batch_size = 4, .shuffle = true, .drop_last = true, .seed = 8});
  CHECK(loader.num_batches() == 2);
  std::set<int64_t> dropped_sets;
  for (int epoch = 0; epoch < 4; ++epoch) {
    const auto batches = one_epoch(loader);
    REQUIRE(batches.size() == 2);
    CHECK(batches[0].size() == 4);
    CHECK(batches[1].size() == 4);
    const auto all = flatten(batches);
    CHECK(std::set<int64_t>(all.begin(), all.end()).size() == 8);
    int64_t sum = 0;
    for (int64_t value : all) sum += value;
    dropped_sets.insert(45 - sum);  // identifies the two dropped samples' sum
  }
  CHECK(dropped_sets.size() > 1);  // a shuffled loader drops different samples in different epochs
  DataLoader exact(numbered_dataset(8), {.batch_size = 4, .drop_last = true});
  CHECK(exact.num_batches() == 2);
}

TEST_CASE("the shuffled order depends only on the seed and the epoch, not on num_workers") {
  std::vector<std::vector<int64_t>> reference;
  for (int workers : {0, 1, 2, 3}) {
    DataLoader loader(numbered_dataset(103), {.batch_size = 8, .shuffle = true, .num_workers = workers, .seed = 77});
    std::vector<std::vector<int64_t>> epochs;
    for (int epoch = 0; epoch < 3; ++epoch) epochs.push_back(flatten(one_epoch(loader)));
    if (workers == 0) {
      reference = epochs;
      CHECK(epochs[0] != epochs[1]);  // different epochs, different orders
      CHECK(epochs[1] != epochs[2]);
      // The order is the sampler's permutation of (seed, epoch).
      CHECK(epochs[2] == random_permutation(103, 77, 2));
    } else {
      CHECK_MESSAGE(epochs == reference, "num_workers = " << workers);
    }
  }
  // Drawing from the global generator in between does not change a seeded loader's order.
  DataLoader again(numbered_dataset(103), {.batch_size = 8, .shuffle = true, .seed = 77});
  rand({100}, {.device = kCPU});
  CHECK(flatten(one_epoch(again)) == reference[0]);
  DataLoader other(numbered_dataset(103), {.batch_size = 8, .shuffle = true, .seed = 78});
  CHECK(flatten(one_epoch(other)) != reference[0]);
}

TEST_CASE("without a seed, the loader's seed comes from manual_seed") {
  manual_seed(5);
  DataLoader first(numbered_dataset(50), {.batch_size = 10, .shuffle = true});
  manual_seed(5);
  DataLoader second(numbered_dataset(50), {.batch_size = 10, .shuffle = true, .num_workers = 2});
  CHECK(first.state_dict().seed == second.state_dict().seed);
  CHECK(flatten(one_epoch(first)) == flatten(one_epoch(second)));
  manual_seed(6);
  DataLoader third(numbered_dataset(50), {.batch_size = 10, .shuffle = true});
  CHECK(third.state_dict().seed != first.state_dict().seed);
}

}  // namespace test_data
