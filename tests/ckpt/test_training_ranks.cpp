// The rank and world size a training-state save is given are checked: world size 0 used to divide
// by zero (SIGFPE), and ranks passed in the wrong order saved a valid checkpoint in which each
// rank's RNG and loader rows were stored under the other rank.
#include <doctest/doctest.h>

#include "ckpt/training_state.h"
#include "runtime/ember.h"
#include "tests/ckpt/helpers.h"
#include "tests/error_of.h"

namespace ember::ckpt::test_training_ranks {
namespace {

namespace fs = std::filesystem;
using ember::testing::error_of;
using ember::testing::names_line;

TEST_CASE("training ranks: save_training_state_async refuses a world size of 0, naming the call") {
  testing::TempDir root;
  nn::Linear linear(2, 2);
  const TrainingState state{.model = linear.ptr().get()};
  SingleRank single;
  AsyncCheckpointer checkpointer(single);
  const int line = __LINE__ + 1;
  SaveFuture future = save_training_state_async(checkpointer, 0, 0, state, {.root = root.path(), .name = "ws0"});
  const std::string message = error_of([&] { future.wait(); });
  CHECK(message.starts_with("save_training_state_async: rank 0 of world size 0 is not the checkpointer's rank 0 "
                            "of 1; pass its coordinator's rank() and world_size() at "));
  CHECK(names_line(message, line));
  CHECK(fs::is_empty(root.path()));  // nothing committed, no temporary directory left

  // The checkpointer still saves afterwards.
  CHECK(save_training_state_async(checkpointer, 0, 1, state, {.root = root.path(), .name = "ok"}).wait() ==
        root / "ok");
}

TEST_CASE("training ranks: swapped ranks fail on every rank instead of swapping their RNG rows") {
  testing::TempDir root;
  Generator first(100), second(200);
  ThreadGroup saving(2);
  std::vector<std::string> errors(2);
  run_ranks(2, [&](Coordinator& coordinator) {
    AsyncCheckpointer checkpointer(saving.rank(coordinator.rank()));
    const TrainingState state{.generators = {{"cpu", coordinator.rank() == 0 ? &first : &second}}};
    const SaveFuture future = save_training_state_async(checkpointer, 1 - coordinator.rank(), 2, state,
                                                        {.root = root.path(), .name = "s", .durable = false});
    errors[coordinator.rank()] = error_of([&] { future.wait(); });
  });
  CHECK(errors[0].starts_with("rank 0: save_training_state_async: rank 1 of world size 2 is not the "
                              "checkpointer's rank 0 of 2; pass its coordinator's rank() and world_size()"));
  CHECK(errors[1] == errors[0]);
  CHECK(!fs::exists(root / "s"));

  // One rank alone wrong (a world size of 3): the other rank's save fails with it instead of hanging.
  run_ranks(2, [&](Coordinator& coordinator) {
    AsyncCheckpointer checkpointer(saving.rank(coordinator.rank()));
    const TrainingState state{.generators = {{"cpu", coordinator.rank() == 0 ? &first : &second}}};
    const int world_size = coordinator.rank() == 1 ? 3 : 2;
    const SaveFuture future = save_training_state_async(checkpointer, coordinator.rank(), world_size, state,
                                                        {.root = root.path(), .name = "s", .durable = false});
    errors[coordinator.rank()] = error_of([&] { future.wait(); });
  });
  CHECK(errors[0].starts_with("rank 1: save_training_state_async: rank 1 of world size 3 is not the "
                              "checkpointer's rank 1 of 2"));
  CHECK(errors[1] == errors[0]);
}

TEST_CASE("training ranks: training_rank_state and add_even_shard refuse a rank outside the world") {
  nn::Linear linear(2, 2);
  const TrainingState state{.model = linear.ptr().get()};
  CHECK(error_of([&] { training_rank_state(state, 0, 0); }) ==
        "training_rank_state: rank 0 of world size 0 is not a rank of that world (0 <= rank < world_size, "
        "world_size >= 1)");
  RankState rank_state;
  const Tensor full = testing::patterned({4, 2}, kFloat32, 1);
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { rank_state.add_even_shard("w", full, 10, 4); });
  CHECK(message.starts_with("checkpoint: add_even_shard of entry 'w': rank 10 of world size 4 is not a rank of "
                            "that world (0 <= rank < world_size, world_size >= 1) at "));
  CHECK(names_line(message, line));
  CHECK(error_of([&] { rank_state.add_even_shard("w", full, 0, 0); }).find("rank 0 of world size 0") !=
        std::string::npos);
  CHECK(!rank_state.contains("w"));
}

}  // namespace
}  // namespace ember::ckpt::test_training_ranks
