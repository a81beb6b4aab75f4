// A data loader's position in a checkpoint saved by N ranks, restored on M ranks: with a
// DistributedSampler the M ranks continue with exactly the samples of the epoch that no saving
// rank had consumed (plus only the padding that evens out their shares).
#include <doctest/doctest.h>

#include <mutex>
#include <set>

#include "ckpt/training_state.h"
#include "runtime/ember.h"
#include "tests/ckpt/helpers.h"

namespace ember::ckpt {
namespace {

constexpr int64_t kSamples = 97;
constexpr int64_t kBatch = 5;

std::shared_ptr<const data::Dataset> numbered() {
  return std::make_shared<data::TensorDataset>(arange(0.0, static_cast<double>(kSamples), 1.0, TensorOptions{.dtype = kInt64}));
}

std::unique_ptr<data::DataLoader> loader_for(const std::shared_ptr<const data::Dataset>& dataset, int world, int rank) {
  auto sampler = std::make_shared<data::DistributedSampler>(kSamples, world, rank, 1234);
  return std::make_unique<data::DataLoader>(dataset, sampler, data::LoaderOptions{.batch_size = kBatch});
}

// The samples of the next `batches` batches (all that is left of the epoch for a large count).
std::vector<int64_t> take(data::DataLoader& loader, int batches) {
  std::vector<int64_t> samples;
  int taken = 0;
  for (auto& [x, y] : loader) {
    for (int64_t value : x.to_vector<int64_t>()) samples.push_back(value);
    if (++taken == batches) break;
  }
  return samples;
}

TEST_CASE("a loader saved on N ranks resumes on M ranks with the unseen samples of its epoch") {
  const auto dataset = numbered();
  for (const auto& [from, to] : std::vector<std::pair<int, int>>{{3, 2}, {2, 4}, {4, 1}}) {
    CAPTURE(from);
    CAPTURE(to);
    testing::TempDir root;
    std::mutex mutex;
    std::set<int64_t> seen;
    run_ranks(from, [&](Coordinator& coordinator) {
      auto loader = loader_for(dataset, from, coordinator.rank());
      const std::vector<int64_t> taken = take(*loader, 3);
      {
        const std::lock_guard lock(mutex);
        seen.insert(taken.begin(), taken.end());
      }
      TrainingState state{.loader = loader.get(), .step = 3};
      save_training_state(coordinator, state, {.root = root.path(), .name = "step_000000003"});
    });
    REQUIRE(seen.size() == static_cast<size_t>(3 * kBatch * from));

    std::multiset<int64_t> rest;
    run_ranks(to, [&](Coordinator& coordinator) {
      auto loader = loader_for(dataset, to, coordinator.rank());
      TrainingState state{.loader = loader.get()};
      load_training_state(coordinator, root.path() / "step_000000003", state);
      const std::vector<int64_t> taken = take(*loader, 1000);
      const std::lock_guard lock(mutex);
      rest.insert(taken.begin(), taken.end());
    });
    for (int64_t sample = 0; sample < kSamples; ++sample)
      if (!seen.count(sample)) CHECK(rest.count(sample) >= 1);
    const auto unseen = static_cast<int64_t>(kSamples - seen.size());
    CHECK(static_cast<int64_t>(rest.size()) >= unseen);
    CHECK(static_cast<int64_t>(rest.size()) - unseen < to);  // padding only
  }
}

}  // namespace
}  // namespace ember::ckpt
