// DistributedSampler: PyTorch's split of an epoch among ranks, and resharding a loader's position
// from N ranks to M ranks so the M ranks continue with exactly the samples no rank has seen.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <limits>
#include <set>

#include "runtime/data_test_helpers.h"

namespace test_distributed_sampler {

using namespace ember;
using namespace ember::data;
using namespace ember::data::testing;

namespace {

constexpr uint64_t kSeed = 0x5eed5eed1234ull;

std::shared_ptr<const Dataset> dataset_of(int64_t samples) {
  return std::make_shared<TensorDataset>(numbered_dataset(samples));
}

std::vector<std::unique_ptr<DataLoader>> loaders(const std::shared_ptr<const Dataset>& dataset, int world,
                                                 int64_t batch) {
  std::vector<std::unique_ptr<DataLoader>> result;
  for (int rank = 0; rank < world; ++rank) {
    auto sampler = std::make_shared<DistributedSampler>(dataset->size(), world, rank, kSeed);
    result.push_back(std::make_unique<DataLoader>(dataset, sampler, LoaderOptions{.batch_size = batch}));
  }
  return result;
}

// Takes `batches` batches from the loader's current epoch; returns the samples they held.
std::vector<int64_t> take(DataLoader& loader, int batches) {
  std::vector<int64_t> samples;
  int taken = 0;
  for (auto& [x, y] : loader) {
    for (int64_t target : y.to_vector<int64_t>()) samples.push_back(target);
    if (++taken == batches) break;
  }
  return samples;
}

}  // namespace

TEST_CASE("DistributedSampler gives rank r every world-th sample of the epoch's padded order") {
  const int64_t size = 10;
  const std::vector<int64_t> order = random_permutation(size, kSeed, 2);
  std::multiset<int64_t> all;
  for (int rank = 0; rank < 3; ++rank) {
    const DistributedSampler sampler(size, 3, rank, kSeed);
    const std::vector<int64_t> share = sampler.epoch_indices(2);
    REQUIRE(share.size() == 4);  // ceil(10 / 3): padded with the order's first samples
    CHECK(sampler.size() == 4);
    for (size_t k = 0; k < share.size(); ++k) CHECK(share[k] == order[(rank + 3 * k) % size]);
    all.insert(share.begin(), share.end());
  }
  for (int64_t i = 0; i < size; ++i) CHECK(all.count(i) >= 1);
  CHECK(all.size() == 12);
  CHECK(all.count(order[0]) == 2);  // the two padding samples repeat the order's start
  CHECK(all.count(order[1]) == 2);
  const DistributedSampler sequential(5, 2, 1, kSeed, false);
  CHECK(sequential.epoch_indices(0) == std::vector<int64_t>{1, 3, 0});
}

TEST_CASE("DistributedSampler rejects a bad world size, rank or resume point with the values") {
  CHECK_THROWS_WITH_AS(DistributedSampler(10, 0, 0, kSeed), doctest::Contains("world_size must be at least 1, got 0"),
                       Error);
  CHECK_THROWS_WITH_AS(DistributedSampler(10, 4, 4, kSeed),
                       doctest::Contains("rank 4 is outside [0, 4) at test_distributed_sampler.cpp:"), Error);
  CHECK_THROWS_WITH_AS(RandomSampler(-1, kSeed), doctest::Contains("got -1 at test_distributed_sampler.cpp:"), Error);
  CHECK_THROWS_WITH_AS(SequentialSampler(-1), doctest::Contains("got -1 at test_distributed_sampler.cpp:"), Error);
  const DistributedSampler sampler(10, 2, 0, kSeed);
  CHECK_THROWS_WITH_AS(sampler.resumed(0, 11), doctest::Contains("11 samples consumed is outside [0, 10]"), Error);
}

TEST_CASE("a loader position saved on N ranks continues on M ranks with exactly the unseen samples") {
  const int64_t size = 103;
  const auto dataset = dataset_of(size);
  for (const auto& [from, to] : std::vector<std::pair<int, int>>{{3, 2}, {2, 5}, {4, 4}, {1, 3}, {5, 1}}) {
    CAPTURE(from);
    CAPTURE(to);
    auto saving = loaders(dataset, from, 4);
    std::set<int64_t> seen;
    std::vector<LoaderState> states;
    for (auto& loader : saving) {
      for (int64_t sample : take(*loader, 3)) seen.insert(sample);
      states.push_back(loader->state_dict());
    }
    // Every rank reports the same global position: 3 batches of 4 on each rank.
    for (const LoaderState& state : states) CHECK(state.global_samples_consumed == int64_t{12} * from);

    auto restored = loaders(dataset, to, 4);
    std::multiset<int64_t> rest;
    for (int rank = 0; rank < to; ++rank) {
      restored[rank]->load_state_dict(states[rank % from]);
      for (int64_t sample : take(*restored[rank], 1000)) rest.insert(sample);
    }
    // The M ranks together see every unseen sample, plus only the padding that evens out their
    // shares (at most to - 1 samples wrapped from the epoch order's start).
    for (int64_t i = 0; i < size; ++i)
      if (!seen.count(i)) CHECK(rest.count(i) >= 1);
    const int64_t unseen = size - static_cast<int64_t>(seen.size());
    CHECK(static_cast<int64_t>(rest.size()) - unseen < to);
    // The next epoch is whole again, split among the M ranks.
    std::set<int64_t> next;
    for (auto& loader : restored) {
      CHECK(loader->epoch() == 1);
      for (int64_t sample : take(*loader, 1000)) next.insert(sample);
    }
    CHECK(static_cast<int64_t>(next.size()) == size);
  }
}

TEST_CASE("restored on the same world size, each rank continues exactly as if uninterrupted") {
  const auto dataset = dataset_of(50);
  auto uninterrupted = loaders(dataset, 3, 4);
  auto saving = loaders(dataset, 3, 4);
  auto restored = loaders(dataset, 3, 4);
  for (int rank = 0; rank < 3; ++rank) {
    const std::vector<int64_t> first = take(*uninterrupted[rank], 2);
    CHECK(take(*saving[rank], 2) == first);
    restored[rank]->load_state_dict(saving[rank]->state_dict());
    CHECK(take(*restored[rank], 1000) == take(*uninterrupted[rank], 1000));
  }
}

TEST_CASE("after a resharded restore, set_epoch on the resumed epoch gives the whole epoch again") {
  // Saved on 3 ranks, restored on 1: the resumed epoch holds only the unseen samples, but that is
  // a property of the resumption, not of the epoch number.
  const auto dataset = dataset_of(24);
  auto saving = loaders(dataset, 3, 2);
  for (auto& loader : saving) (void)take(*loader, 2);
  auto restored = loaders(dataset, 1, 2);
  restored[0]->load_state_dict(saving[0]->state_dict());
  CHECK(take(*restored[0], 1000).size() == 12);  // 24 samples, 3 ranks x 2 batches x 2 seen

  auto fresh = loaders(dataset, 1, 2);
  const std::vector<int64_t> whole_epoch_0 = take(*fresh[0], 1000);
  REQUIRE(whole_epoch_0.size() == 24);
  restored[0]->set_epoch(0);
  CHECK(restored[0]->state_dict().global_samples_consumed == 0);
  CHECK(take(*restored[0], 1000) == whole_epoch_0);
  // A later restore of a same-world state takes the loader's own sampler again, not the resumed one.
  auto again = loaders(dataset, 1, 2);
  (void)take(*again[0], 3);
  restored[0]->load_state_dict(again[0]->state_dict());
  CHECK(take(*restored[0], 1000) == std::vector<int64_t>(whole_epoch_0.begin() + 6, whole_epoch_0.end()));
}

TEST_CASE("LoaderState keeps the global position through its map form, and older maps lack it") {
  LoaderState state{2, 3, 12, 7, 103};
  state.global_samples_consumed = 36;
  CHECK(LoaderState::from_map(state.to_map()) == state);
  std::map<std::string, int64_t> older = state.to_map();
  older.erase("global_samples_consumed");
  CHECK(LoaderState::from_map(older).global_samples_consumed == -1);
}

TEST_CASE("a state saved at an epoch's last batch resumes with the next epoch, on any world size") {
  // A checkpoint taken inside the loop at its last batch: the restored loaders must not first run
  // an empty epoch (which shifts every later epoch by one).
  const auto dataset = dataset_of(13);
  for (const bool drop_last : {false, true}) {
    const auto make = [&](int world, int rank) {
      return std::make_unique<DataLoader>(dataset, std::make_shared<DistributedSampler>(13, world, rank, kSeed),
                                          LoaderOptions{.batch_size = 3, .drop_last = drop_last});
    };
    for (const int to : {2, 3}) {
      INFO("drop_last ", drop_last, ", restored on ", to, " ranks");
      std::vector<LoaderState> at_end;
      std::vector<std::vector<int64_t>> next_epoch;  // what each of 2 uninterrupted ranks sees next
      for (int rank = 0; rank < 2; ++rank) {
        const auto saving = make(2, rank);
        for (auto& batch : *saving) {
          CHECK(batch.data.defined());
          at_end.resize(rank + 1);
          at_end[rank] = saving->state_dict();
        }
        next_epoch.push_back(take(*saving, 1000));
      }
      std::set<int64_t> next;
      for (int rank = 0; rank < to; ++rank) {
        const auto restored = make(to, rank);
        restored->load_state_dict(at_end[rank % 2]);
        CHECK(restored->epoch() == at_end[0].epoch + 1);
        const std::vector<int64_t> samples = take(*restored, 1000);
        if (to == 2) CHECK(samples == next_epoch[rank]);
        next.insert(samples.begin(), samples.end());
      }
      // The next epoch, whole: with drop_last each of `to` ranks drops what its 3-sample batches leave.
      CHECK(static_cast<int64_t>(next.size()) == (drop_last ? 13 / to / 3 * 3 * to : 13));
    }
  }
}

TEST_CASE("a batch size near INT64_MAX gives one batch of the whole dataset") {
  const auto dataset = dataset_of(5);
  DataLoader loader(dataset, LoaderOptions{.batch_size = std::numeric_limits<int64_t>::max()});
  CHECK(loader.num_batches() == 1);
  std::vector<int64_t> seen;
  for (auto& [x, y] : loader) seen = y.to_vector<int64_t>();
  CHECK(seen == std::vector<int64_t>{0, 1, 2, 3, 4});
}

}  // namespace test_distributed_sampler
