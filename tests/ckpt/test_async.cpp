// Async save: the checkpoint holds the state at the call even when training changes it right
// after; errors surface in wait(); one save in flight; the host buffer pool is reused.
#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "ckpt/async_save.h"
#include "ckpt/reader.h"
#include "tests/ckpt/helpers.h"

namespace ember::ckpt::test_async {
namespace {

namespace fs = std::filesystem;

TEST_CASE("async save: mutating the tensors right after save_async does not change the checkpoint") {
  testing::TempDir root;
  const testing::Reference reference = testing::awkward_reference(5);
  constexpr int kWorld = 3;
  // Each rank owns its memory, as separate processes would: replicated tensors are per-rank copies.
  std::vector<testing::Reference> live_reference(kWorld, reference);
  for (testing::Reference& copy : live_reference)
    for (auto& [name, tensor] : copy.tensors) tensor = testing::byte_clone(tensor);
  ThreadGroup save_group(kWorld);
  run_ranks(kWorld, [&](Coordinator& coordinator) {
    const int rank = coordinator.rank();
    AsyncCheckpointer checkpointer(save_group.rank(rank));
    const RankState state = testing::rank_view(live_reference[rank], rank, kWorld);
    SaveFuture future = checkpointer.save_async(state, {.root = root.path(), .name = "step_000000001"});
    // "Training" overwrites this rank's part of every tensor before the write can have finished.
    for (const auto& [name, local] : state.tensors()) {
      Tensor target = local.tensor;
      if (target.numel() > 0) std::memset(target.raw_data_ptr(), 0x5a, target.nbytes());
    }
    CHECK(future.wait() == root / "step_000000001");
    CHECK(future.ready());
    CHECK(checkpointer.last_stats().blocking_seconds >= checkpointer.last_stats().snapshot_seconds);
  });
  const testing::Reference saved = testing::read_back(root / "step_000000001");
  for (const auto& [name, tensor] : reference.tensors)
    CHECK_MESSAGE(testing::same_bytes(saved.tensors.at(name), tensor), name);
}

TEST_CASE("async save: wait() rethrows a write error on every rank") {
  testing::TempDir root;
  const testing::Reference reference = testing::awkward_reference(6);
  fs::create_directories(root / "step_000000001");  // the target exists: the commit must refuse
  ThreadGroup save_group(2);
  std::vector<std::string> errors(2);
  run_ranks(2, [&](Coordinator& coordinator) {
    AsyncCheckpointer checkpointer(save_group.rank(coordinator.rank()));
    SaveFuture future = checkpointer.save_async(testing::rank_view(reference, coordinator.rank(), 2),
                                                {.root = root.path(), .name = "step_000000001"});
    try {
      future.wait();
    } catch (const Error& error) {
      errors[coordinator.rank()] = error.what();
    }
  });
  CHECK(errors[0].find("step_000000001 already exists") != std::string::npos);
  CHECK(errors[1] == errors[0]);
}

TEST_CASE("async save: refuses a bool byte other than 0 or 1 like save() does, committing nothing") {
  testing::TempDir root;
  Tensor flags = from_vector(std::vector<bool>{false, true, true, false}, {4}, {.device = kCPU});
  static_cast<uint8_t*>(flags.raw_data_ptr())[1] = 2;  // through raw memory, as a kernel bug would
  RankState state;
  state.add_replicated("flags", flags);
  SingleRank single;
  const char* expected = "checkpoint save: bool tensor 'flags' holds byte 2 at element 1; a bool element is 0 or 1";
  CHECK_THROWS_WITH_AS(save(single, state, {.root = root.path(), .name = "sync", .durable = false}), expected, Error);
  AsyncCheckpointer checkpointer(single);
  SaveFuture future = checkpointer.save_async(state, {.root = root.path(), .name = "async", .durable = false});
  CHECK_THROWS_WITH_AS(future.wait(), expected, Error);
  CHECK(fs::is_empty(root.path()));  // neither checkpoint nor a temporary directory
}

TEST_CASE("async save: a second save waits for the first, and the buffer is reused") {
  testing::TempDir root;
  testing::Reference reference;
  reference.tensors["weight"] = testing::patterned({256, 1024}, kFloat32, 8);  // 1 MiB
  reference.sharded["weight"] = false;
  SingleRank coordinator;
  AsyncCheckpointer checkpointer(coordinator);
  std::vector<SaveFuture> futures;
  for (int step = 1; step <= 3; ++step) {
    // Each step changes the weight; each checkpoint must hold its own step's values.
    std::memset(reference.tensors["weight"].raw_data_ptr(), step, 64);
    futures.push_back(checkpointer.save_async(testing::rank_view(reference, 0, 1),
                                              {.root = root.path(), .name = step_name(step)}));
    if (step > 1) CHECK(futures[step - 2].ready());  // at most one in flight: the previous is done
  }
  checkpointer.wait_all();
  CHECK(checkpointer.pool().allocated_bytes() == 1 << 20);  // one buffer, reused three times
  for (int step = 1; step <= 3; ++step) {
    futures[step - 1].wait();
    const Tensor saved = CheckpointReader(root / step_name(step)).read("weight");
    CHECK(static_cast<const uint8_t*>(saved.raw_data_ptr())[0] == step);
    CHECK(static_cast<const uint8_t*>(saved.raw_data_ptr())[100] ==
          static_cast<const uint8_t*>(reference.tensors["weight"].raw_data_ptr())[100]);
  }
}

TEST_CASE("host buffer pool: blocks past its bound, grows a free buffer that is too small") {
  HostBufferPool pool(1);
  auto first = pool.acquire(100);
  CHECK(first->capacity == 100);
  std::atomic<bool> acquired{false};
  std::thread waiter([&] {
    auto second = pool.acquire(300);
    acquired = true;
    CHECK(second->capacity == 300);
    pool.release(std::move(second));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(!acquired.load());  // the only buffer is lent out
  pool.release(std::move(first));
  waiter.join();
  CHECK(acquired.load());
  CHECK(pool.allocated_bytes() == 300);
}

}  // namespace
}  // namespace ember::ckpt::test_async
