// DataLoader state and lifecycle: resume mid-epoch, state validation, worker exceptions,
// bounded prefetch and clean shutdown, custom samplers.
#include <doctest/doctest.h>

#include "runtime/data_test_helpers.h"

namespace test_data_loader_state {

using namespace ember;
using namespace ember::data;
using namespace ember::data::testing;

namespace {

LoaderOptions shuffled(int workers) {
  return {.batch_size = 6, .shuffle = true, .num_workers = workers, .seed = 0xfeedface12345678ull};
}

// Visits samples in reverse: shows the loader batches whatever order a sampler gives.
class ReverseSampler : public Sampler {
 public:
  explicit ReverseSampler(int64_t size) : size_(size) {}
  std::vector<int64_t> epoch_indices(int64_t) const override {
    std::vector<int64_t> indices;
    for (int64_t i = size_ - 1; i >= 0; --i) indices.push_back(i);
    return indices;
  }
  int64_t size() const override { return size_; }

 private:
  int64_t size_;
};

}  // namespace

TEST_CASE("a loader restored mid-epoch yields the same batches as an uninterrupted one") {
  // 40 samples in batches of 6: 7 batches per epoch, the last one of 4.
  DataLoader uninterrupted(numbered_dataset(40), shuffled(0));
  std::vector<std::vector<int64_t>> expected;
  for (int epoch = 0; epoch < 3; ++epoch) {
    for (auto& batch : one_epoch(uninterrupted)) expected.push_back(batch);
  }
  REQUIRE(expected.size() == 21);

  for (int workers : {0, 2}) {
    std::vector<std::vector<int64_t>> seen;
    std::map<std::string, int64_t> saved;
    {
      DataLoader first(numbered_dataset(40), shuffled(workers));
      for (auto& batch : one_epoch(first)) seen.push_back(batch);
      int64_t taken = 0;
      for (auto& [x, y] : first) {  // epoch 1: stop after three batches, as a crash would
        seen.push_back(y.to_vector<int64_t>());
        if (++taken == 3) {
          saved = first.state_dict().to_map();
          break;
        }
      }
    }  // destroyed mid-epoch with workers still prefetching
    CHECK(saved.at("epoch") == 1);
    CHECK(saved.at("batches_consumed") == 3);
    CHECK(saved.at("samples_consumed") == 18);
    CHECK(saved.at("dataset_size") == 40);

    DataLoader resumed(numbered_dataset(40), shuffled(2 - workers));  // a different worker count
    resumed.load_state_dict(LoaderState::from_map(saved));
    const auto rest = one_epoch(resumed);
    CHECK(rest.size() == 4);
    for (auto& batch : rest) seen.push_back(batch);
    for (auto& batch : one_epoch(resumed)) seen.push_back(batch);
    CHECK_MESSAGE(seen == expected, "first loader with num_workers = " << workers);
  }
}

TEST_CASE("breaking out of a loop and iterating again continues the epoch") {
  DataLoader loader(numbered_dataset(30), shuffled(1));
  const auto order = random_permutation(30, 0xfeedface12345678ull, 0);
  std::vector<int64_t> seen;
  for (auto& [x, y] : loader) {
    for (int64_t value : y.to_vector<int64_t>()) seen.push_back(value);
    break;
  }
  CHECK(loader.state_dict().batches_consumed == 1);
  for (auto& batch : one_epoch(loader)) seen.insert(seen.end(), batch.begin(), batch.end());
  CHECK(seen == order);
  CHECK(loader.state_dict() == LoaderState{1, 0, 0, static_cast<int64_t>(0xfeedface12345678ull), 30});
}

TEST_CASE("a state saved after an epoch's last batch resumes with the next epoch") {
  DataLoader loader(numbered_dataset(12), shuffled(0));
  LoaderState at_end;
  for (auto& batch : loader) {
    CHECK(batch.data.defined());
    at_end = loader.state_dict();
  }
  CHECK(at_end.epoch == 0);
  CHECK(at_end.batches_consumed == 2);
  CHECK(at_end.samples_consumed == 12);
  const auto next = flatten(one_epoch(loader));
  DataLoader restored(numbered_dataset(12), shuffled(2));
  restored.load_state_dict(at_end);
  CHECK(flatten(one_epoch(restored)) == next);
  CHECK(restored.epoch() == 2);
  restored.set_epoch(1);
  CHECK(flatten(one_epoch(restored)) == next);
}

TEST_CASE("load_state_dict rejects a state that does not fit the loader") {
  DataLoader loader(numbered_dataset(40), shuffled(0));
  LoaderState state = loader.state_dict();
  state.dataset_size = 41;
  CHECK_THROWS_WITH_AS(loader.load_state_dict(state),
                       doctest::Contains("a dataset of 41 samples, this loader has 40"), Error);
  state = {.epoch = 2, .batches_consumed = 3, .samples_consumed = 24, .seed = 1, .dataset_size = 40};
  CHECK_THROWS_WITH_AS(loader.load_state_dict(state),
                       doctest::Contains("24 samples in 3 batches does not match batch_size 6"), Error);
  state = {.epoch = 0, .batches_consumed = 8, .samples_consumed = 40, .seed = 1, .dataset_size = 40};
  CHECK_THROWS_WITH_AS(loader.load_state_dict(state), doctest::Contains("batches_consumed 8 is outside [0, 7]"),
                       Error);
  // Errors name the caller's line, as the constructors' do.
  CHECK_THROWS_WITH_AS(loader.load_state_dict(state), doctest::Contains("test_data_loader_state.cpp:"), Error);
  CHECK_THROWS_WITH_AS(loader.set_epoch(-1), doctest::Contains("epoch must be non-negative, got -1 at test_data"),
                       Error);
  CHECK_THROWS_WITH_AS(LoaderState::from_map({{"epoch", 1}}), doctest::Contains("missing key 'batches_consumed'"),
                       Error);
  CHECK(loader.state_dict().epoch == 0);  // rejected states leave the loader as it was
  const LoaderState round_trip{3, 2, 12, -5, 40};
  CHECK(LoaderState::from_map(round_trip.to_map()) == round_trip);
}

TEST_CASE("bad loader options are rejected") {
  CHECK_THROWS_WITH_AS(DataLoader(numbered_dataset(4), {.batch_size = 0}),
                       doctest::Contains("batch_size must be at least 1, got 0"), Error);
  CHECK_THROWS_WITH_AS(DataLoader(numbered_dataset(4), {.num_workers = -1}),
                       doctest::Contains("num_workers must be non-negative, got -1"), Error);
  CHECK_THROWS_WITH_AS(DataLoader(numbered_dataset(4), {.prefetch_factor = 0}),
                       doctest::Contains("prefetch_factor must be at least 1"), Error);
  CHECK_THROWS_WITH_AS(DataLoader(std::make_shared<TensorDataset>(numbered_dataset(4)),
                                  std::make_shared<ReverseSampler>(4), {.shuffle = true}),
                       doctest::Contains("conflicts with a custom sampler"), Error);
}

TEST_CASE("an exception in a worker reaches the consumer at its batch") {
  for (int workers : {0, 1, 3}) {
    // Sample 13 is in batch 2 of a sequential loader with batches of 5.
    DataLoader loader(ProbeDataset(30, 13), {.batch_size = 5, .num_workers = workers});
    int64_t delivered = 0;
    auto run = [&] {
      for (auto& [x, y] : loader) {
        CHECK(y.to_vector<int64_t>()[0] == 5 * delivered);
        ++delivered;
      }
    };
    CHECK_THROWS_WITH_AS(run(), doctest::Contains("ProbeDataset: sample 13 is corrupt"), Error);
    CHECK(delivered == 2);
    CHECK(loader.state_dict().batches_consumed == 2);  // the failed batch is still to come
    CHECK_THROWS_AS(run(), Error);  // iterating again retries it
  }
}

TEST_CASE("workers prefetch a bounded number of batches and stop cleanly mid-epoch") {
  ProbeDataset dataset(400, -1, std::chrono::milliseconds(1));
  auto shared = std::make_shared<ProbeDataset>(dataset);
  {
    DataLoader loader(shared, {.batch_size = 2, .num_workers = 3, .prefetch_factor = 2});
    auto iterator = loader.begin();
    CHECK((*iterator).target.to_vector<int64_t>() == std::vector<int64_t>{0, 1});
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // a slow consumer
    // Batch 0 was taken; at most 3 workers x 2 batches may be claimed beyond it.
    CHECK(shared->calls() <= 1 + 6);
    CHECK(shared->calls() >= 2);
  }  // the destructor joins the workers: the test finishing is the check that nothing hangs
  const int64_t calls_after = shared->calls();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(shared->calls() == calls_after);
}

TEST_CASE("a custom sampler sets the order and an empty dataset gives empty epochs") {
  DataLoader loader(std::make_shared<TensorDataset>(numbered_dataset(7)), std::make_shared<ReverseSampler>(7),
                    {.batch_size = 3, .num_workers = 2});
  CHECK(one_epoch(loader) == std::vector<std::vector<int64_t>>{{6, 5, 4}, {3, 2, 1}, {0}});
  DataLoader empty(numbered_dataset(0), {.batch_size = 4, .shuffle = true, .num_workers = 1});
  CHECK(empty.num_batches() == 0);
  CHECK(one_epoch(empty).empty());
  CHECK(empty.epoch() == 1);
}

TEST_CASE("pin_memory: batches stay on the CPU, page-locked when a CUDA device is usable") {
  for (int workers : {0, 2}) {
    DataLoader loader(numbered_dataset(8), {.batch_size = 4, .num_workers = workers, .pin_memory = true});
    for (auto& [x, y] : loader) {
      CHECK(x.device() == kCPU);
      CHECK(y.device() == kCPU);
      CHECK(x.is_pinned() == cuda_is_available());
      CHECK(y.is_pinned() == cuda_is_available());
    }
  }
}

}  // namespace test_data_loader_state
