// Save at N ranks, load at M: every rank gets bit-exact rows, for every N, M in {1,2,3,4,5,7,8},
// with prime-sized, tiny, empty and 0-d tensors; and the 8 -> 3 -> 5 -> 8 round trip.
#include <doctest/doctest.h>

#include "ckpt/load.h"
#include "ckpt/reader.h"
#include "ckpt/reshard.h"
#include "ckpt/writer.h"
#include "tests/ckpt/helpers.h"

namespace ember::ckpt::test_reshard {
namespace {

using testing::TempDir;

constexpr int kWorldSizes[] = {1, 2, 3, 4, 5, 7, 8};

void save_reference(const testing::Reference& reference, int world_size,
                    const std::filesystem::path& root, const std::string& name) {
  run_ranks(world_size, [&](Coordinator& coordinator) {
    const RankState state = testing::rank_view(reference, coordinator.rank(), world_size);
    save(coordinator, state, {.root = root, .name = name, .durable = false});
  });
}

void load_and_check(const testing::Reference& reference, int world_size,
                    const std::filesystem::path& directory) {
  std::vector<RankState> live(world_size);
  for (int rank = 0; rank < world_size; ++rank)
    live[rank] = testing::live_state(reference, rank, world_size, 1000 + rank * 50);
  run_ranks(world_size, [&](Coordinator& coordinator) {
    load(coordinator, directory, live[coordinator.rank()]);
  });
  for (int rank = 0; rank < world_size; ++rank) {
    CAPTURE(rank);
    testing::check_matches(live[rank], reference);
  }
}

TEST_CASE("reshard matrix: save at N ranks, load at M ranks, bit-exact") {
  TempDir root;
  const testing::Reference reference = testing::awkward_reference(7);
  for (int saved : kWorldSizes) {
    const std::string name = step_name(saved);
    save_reference(reference, saved, root.path(), name);
    const CheckpointReader reader(root / name);
    CHECK(reader.manifest().world_size == saved);
    CHECK(reader.manifest().files.size() == static_cast<size_t>(saved));
    // A replicated tensor is written once; a sharded one as one chunk per rank that holds rows.
    CHECK(reader.entry("shared.table").tensor().chunks.size() == 1);
    CHECK(reader.entry("layer.tiny").tensor().chunks.size() == static_cast<size_t>(std::min(saved, 2)));
    for (int loaded : kWorldSizes) {
      CAPTURE(saved);
      CAPTURE(loaded);
      load_and_check(reference, loaded, root / name);
    }
  }
}

TEST_CASE("reshard round trip 8 -> 3 -> 5 -> 8 is bit-exact") {
  TempDir root;
  const testing::Reference reference = testing::awkward_reference(11);
  save_reference(reference, 8, root.path(), "step_000000001");
  std::filesystem::path previous = root / "step_000000001";
  int step = 2;
  for (int world_size : {3, 5, 8}) {
    // Load at the new world size, then save what was loaded from that layout.
    std::vector<RankState> live(world_size);
    for (int rank = 0; rank < world_size; ++rank)
      live[rank] = testing::live_state(reference, rank, world_size, 77 + rank);
    const std::string name = step_name(step++);
    run_ranks(world_size, [&](Coordinator& coordinator) {
      load(coordinator, previous, live[coordinator.rank()]);
      save(coordinator, live[coordinator.rank()], {.root = root.path(), .name = name, .durable = false});
    });
    previous = root / name;
    const CheckpointReader reader(previous);
    CHECK(reader.manifest().world_size == world_size);
  }
  const testing::Reference final_state = testing::read_back(previous);
  REQUIRE(final_state.tensors.size() == reference.tensors.size());
  for (const auto& [name, tensor] : reference.tensors) {
    CAPTURE(name);
    CHECK(testing::same_bytes(final_state.tensors.at(name), tensor));
    CHECK(final_state.sharded.at(name) == reference.sharded.at(name));
  }
  for (const auto& [name, value] : reference.values)
    CHECK_MESSAGE(testing::same_value(final_state.values.at(name), value), name);
}

TEST_CASE("a resharding rank reads only its rows plus the partial blocks at chunk edges") {
  TempDir root;
  testing::Reference reference;
  reference.tensors["big"] = testing::patterned({1000, 1024}, kFloat32, 3);  // 4 MB
  reference.sharded["big"] = true;
  save_reference(reference, 8, root.path(), "step_000000001");
  const CheckpointReader reader(root / "step_000000001");
  const uint64_t block = reader.entry("big").tensor().chunks[0].block_bytes;
  std::vector<LoadStats> stats(3);
  std::vector<RankState> live(3);
  for (int rank = 0; rank < 3; ++rank) live[rank] = testing::live_state(reference, rank, 3, 9);
  run_ranks(3, [&](Coordinator& coordinator) {
    stats[coordinator.rank()] = load(coordinator, root / "step_000000001", live[coordinator.rank()]);
  });
  for (int rank = 0; rank < 3; ++rank) {
    CAPTURE(rank);
    testing::check_matches(live[rank], reference);
    const uint64_t wanted = static_cast<uint64_t>(even_rows(1000, rank, 3).size()) * 1024 * 4;
    CHECK(stats[rank].bytes_loaded == wanted);
    CHECK(stats[rank].bytes_read >= wanted);
    // At most two partial blocks per rank boundary crossed (a rank's range has two ends).
    CHECK(stats[rank].bytes_read <= wanted + 2 * block);
  }
}

}  // namespace
}  // namespace ember::ckpt::test_reshard

namespace ember::ckpt::test_reshard {
namespace {

TEST_CASE("offline reshard: each replicated tensor is read only by the new rank that writes it") {
  // Every new rank used to read a full copy of every replicated tensor: M copies in memory at once.
  TempDir root;
  testing::Reference reference;
  reference.tensors["table"] = testing::patterned({64, 64}, kFloat32, 3);  // 16 KiB, one chunk
  reference.sharded["table"] = false;
  reference.values["step"] = int64_t{1};
  save_reference(reference, 2, root.path(), "original");
  constexpr int kNewWorld = 4;
  int writers = 0;
  for (int rank = 0; rank < kNewWorld; ++rank) {
    CAPTURE(rank);
    const CheckpointReader reader(root / "original");
    const HostState host = reshard_rank_state(reader, rank, kNewWorld);
    REQUIRE(host.tensors.size() == 1);  // declared on every rank
    CHECK(host.tensors[0].bytes == 64 * 64 * 4);
    const bool writes = host.tensors[0].data != nullptr;
    writers += writes ? 1 : 0;
    CHECK(reader.bytes_read() == (writes ? 64 * 64 * 4 : 0));
    CHECK(std::get<int64_t>(host.values.at("step")) == 1);
  }
  CHECK(writers == 1);
  reshard(root / "original", kNewWorld, {.root = root.path(), .name = "four", .durable = false});
  CHECK(testing::same_bytes(CheckpointReader(root / "four").read("table"), reference.tensors.at("table")));
}

TEST_CASE("a state of only empty tensors and values saves and loads") {
  testing::TempDir root;
  testing::Reference reference;
  reference.tensors["no_rows"] = testing::patterned({0, 3}, kFloat32, 1);
  reference.sharded["no_rows"] = true;
  reference.tensors["no_columns"] = testing::patterned({4, 0}, kInt32, 2);
  reference.sharded["no_columns"] = false;
  reference.values["step"] = int64_t{3};
  run_ranks(2, [&](Coordinator& coordinator) {
    save(coordinator, testing::rank_view(reference, coordinator.rank(), 2),
         {.root = root.path(), .name = "step_000000003", .durable = false});
  });
  std::vector<RankState> live = {testing::live_state(reference, 0, 3, 5), testing::live_state(reference, 1, 3, 6),
                                 testing::live_state(reference, 2, 3, 7)};
  run_ranks(3, [&](Coordinator& coordinator) {
    load(coordinator, root / "step_000000003", live[coordinator.rank()]);
  });
  for (const RankState& state : live) testing::check_matches(state, reference);
  CHECK(std::get<int64_t>(live[2].value("step")) == 3);
}

}  // namespace
}  // namespace ember::ckpt::test_reshard
