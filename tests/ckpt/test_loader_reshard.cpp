// A data loader's position in a checkpoint saved by N ranks, restored on M ranks: with a
// DistributedSampler the M ranks continue with exactly the samples of the epoch that no saving
// rank had consumed (plus only the padding that evens out their shares).
#include <doctest/doctest.h>

#include <mutex>
#include <set>

#include "ckpt/reshard.h"
#include "ckpt/training_state.h"
#include "runtime/ember.h"
#include "tests/ckpt/helpers.h"

namespace ember::ckpt::test_loader_reshard {
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

// What one rank restored: the report, its generator, its loader's position and the samples it
// then delivers until the end of the epoch.
struct Restored {
  RestoreReport report;
  GeneratorState generator;
  data::LoaderState loader;
  std::vector<int64_t> rest_of_epoch;
};

std::vector<Restored> restore_on(const std::filesystem::path& directory, int world) {
  const auto dataset = numbered();
  std::vector<Restored> restored(world);
  run_ranks(world, [&](Coordinator& coordinator) {
    Generator generator(0);
    auto loader = loader_for(dataset, world, coordinator.rank());
    TrainingState state{.loader = loader.get(), .generators = {{"cpu", &generator}}};
    Restored& mine = restored[coordinator.rank()];
    mine.report = load_training_state(coordinator, directory, state);
    mine.generator = generator.get_state();
    mine.loader = loader->state_dict();
    mine.rest_of_epoch = take(*loader, 1000);
  });
  return restored;
}

TEST_CASE("a training state resharded offline restores like the original, rows mapped by the saving world") {
  const auto dataset = numbered();
  struct Case {
    int saved, resharded, restored;
  };
  // 4 -> 2 restored on 3: rank 2 must take saved rank 2's rows (2 % 4), not rank 0's (2 % 2).
  for (const Case c : {Case{2, 3, 3}, Case{4, 7, 7}, Case{1, 3, 3}, Case{4, 2, 3}, Case{3, 1, 2}}) {
    CAPTURE(c.saved);
    CAPTURE(c.resharded);
    CAPTURE(c.restored);
    testing::TempDir root;
    std::vector<GeneratorState> saved_rng(c.saved);
    run_ranks(c.saved, [&](Coordinator& coordinator) {
      const int rank = coordinator.rank();
      Generator generator(100 + rank);
      for (int i = 0; i <= rank; ++i) generator.next_word();  // every rank at its own offset
      saved_rng[rank] = generator.get_state();
      auto loader = loader_for(dataset, c.saved, rank);
      take(*loader, 2);
      TrainingState state{.loader = loader.get(), .generators = {{"cpu", &generator}}, .step = 2};
      save_training_state(coordinator, state, {.root = root.path(), .name = "original", .durable = false});
    });
    reshard(root / "original", c.resharded,
            {.root = root.path(), .name = "resharded", .durable = false, .update_latest = false});
    const std::vector<Restored> original = restore_on(root / "original", c.restored);
    const std::vector<Restored> resharded = restore_on(root / "resharded", c.restored);
    for (int rank = 0; rank < c.restored; ++rank) {
      CAPTURE(rank);
      const int source = rank % c.saved;
      CHECK(original[rank].report.saved_world_size == c.saved);
      CHECK(resharded[rank].report.saved_world_size == c.saved);
      CHECK(original[rank].report.source_rank == source);
      CHECK(resharded[rank].report.source_rank == source);
      CHECK(original[rank].generator == saved_rng[source]);
      CHECK(resharded[rank].generator == saved_rng[source]);
      CHECK(original[rank].loader.global_samples_consumed == 2 * kBatch * c.saved);
      CHECK(resharded[rank].loader.global_samples_consumed == 2 * kBatch * c.saved);
      CHECK(!original[rank].rest_of_epoch.empty());
      CHECK(resharded[rank].rest_of_epoch == original[rank].rest_of_epoch);
    }
  }
}

}  // namespace
}  // namespace ember::ckpt::test_loader_reshard
