// Retention and the `latest` pointer.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>

#include "ckpt/file_io.h"
#include "ckpt/retention.h"
#include "ckpt/writer.h"
#include "tests/ckpt/helpers.h"
#include "tests/error_of.h"

namespace ember::ckpt::test_retention {
namespace {

namespace fs = std::filesystem;

void save_step(const fs::path& root, int64_t step, int keep_last) {
  testing::Reference reference;
  reference.tensors["w"] = testing::patterned({3, 2}, kFloat32, static_cast<uint64_t>(step));
  reference.sharded["w"] = true;
  run_ranks(2, [&](Coordinator& coordinator) {
    save(coordinator, testing::rank_view(reference, coordinator.rank(), 2),
         {.root = root, .name = step_name(step), .keep_last = keep_last, .durable = false});
  });
}

std::vector<int64_t> steps(const fs::path& root) {
  std::vector<int64_t> result;
  for (const CheckpointInfo& info : list_checkpoints(root)) result.push_back(info.step);
  return result;
}

TEST_CASE("retention: keep_last keeps the newest k and latest points at the newest") {
  testing::TempDir root;
  for (int64_t step : {10, 20, 30, 40, 50}) save_step(root.path(), step, 2);
  CHECK(steps(root.path()) == std::vector<int64_t>{40, 50});
  CHECK(latest_checkpoint(root.path()) == root / step_name(50));
  CHECK(read_small_file(root / "latest", 100) == step_name(50) + "\n");
}

TEST_CASE("retention: never deletes the checkpoint latest names, even when it is older") {
  testing::TempDir root;
  for (int64_t step : {1, 2, 3}) save_step(root.path(), step, 0);
  write_latest(root.path(), step_name(1), false);  // e.g. a rollback to step 1
  const RetentionReport report = apply_retention(root.path(), 1, false);
  CHECK(steps(root.path()) == std::vector<int64_t>{1, 3});
  CHECK(report.removed == std::vector<std::string>{step_name(2)});
  CHECK_THROWS_WITH_AS(apply_retention(root.path(), 0, false),
                       "checkpoint retention: keep_last must be at least 1, got 0", Error);
}

TEST_CASE("retention: stale temporary directories are removed, other directories kept") {
  testing::TempDir root;
  save_step(root.path(), 1, 0);
  fs::create_directories(root / ".tmp-step_000000002" / "junk");
  fs::create_directories(root / ".deleting-step_000000000");
  fs::create_directories(root / "my_notes");
  const RetentionReport report = apply_retention(root.path(), 3, false);
  CHECK(report.removed.empty());
  CHECK(report.removed_temporaries.size() == 2);
  CHECK(!fs::exists(root / ".tmp-step_000000002"));
  CHECK(fs::exists(root / "my_notes"));
  CHECK(steps(root.path()) == std::vector<int64_t>{1});
}

TEST_CASE("retention after a commit deletes old checkpoints only, never another save's temporaries") {
  testing::TempDir root;
  for (int64_t step : {1, 2}) save_step(root.path(), step, 0);
  // Another save still writing (an async save of step 9, another job), and a crashed deletion.
  fs::create_directories(root / ".tmp-step_000000009");
  std::ofstream(root / ".tmp-step_000000009" / "rank_00000.bin") << "half written";
  fs::create_directories(root / ".deleting-step_000000000");
  save_step(root.path(), 3, 2);
  CHECK(steps(root.path()) == std::vector<int64_t>{2, 3});
  CHECK(read_small_file(root / ".tmp-step_000000009" / "rank_00000.bin", 100) == "half written");
  CHECK(fs::exists(root / ".deleting-step_000000000"));
  CHECK(!fs::exists(root / ".deleting-step_000000001"));  // what this retention hid, it removed
  // The explicit pass (no save in flight) removes what crashes left.
  RetentionReport report = apply_retention(root.path(), 2, false);
  CHECK(report.removed.empty());
  std::sort(report.removed_temporaries.begin(), report.removed_temporaries.end());
  CHECK(report.removed_temporaries ==
        std::vector<std::string>{".deleting-step_000000000", ".tmp-step_000000009"});
  CHECK(steps(root.path()) == std::vector<int64_t>{2, 3});
}

TEST_CASE("retention: a root that does not exist yet is a no-op, one that is a file an ember::Error") {
  testing::TempDir scratch;
  const RetentionReport report = apply_retention(scratch / "fresh_run", 3, true);  // a first run, at startup
  CHECK(report.removed.empty());
  CHECK(report.removed_temporaries.empty());
  CHECK(!fs::exists(scratch / "fresh_run"));
  std::ofstream(scratch / "file") << "x";
  CHECK(ember::testing::error_of([&] { apply_retention(scratch / "file", 3, true); }) ==
        "checkpoint retention: cannot list root " + (scratch / "file").string() + ": Not a directory");
}

TEST_CASE("retention: a .deleting-NAME left by a crashed deletion does not fail later saves") {
  testing::TempDir root;
  // A retention killed inside its remove_all: step 1 hidden and partly deleted. The run restarts
  // into the same root and saves step 1 again.
  fs::create_directories(root / ".deleting-step_000000001");
  std::ofstream(root / ".deleting-step_000000001" / "rank_00000.bin") << "x";
  for (int64_t step : {1, 2, 3}) {
    CAPTURE(step);
    CHECK_NOTHROW(save_step(root.path(), step, 1));
  }
  CHECK(steps(root.path()) == std::vector<int64_t>{3});
  CHECK(!fs::exists(root / ".deleting-step_000000001"));
  CHECK(!fs::exists(root / ".deleting-step_000000002"));
}

TEST_CASE("latest: a missing or damaged pointer falls back to the newest committed checkpoint") {
  testing::TempDir root;
  CHECK(!latest_checkpoint(root.path()).has_value());
  save_step(root.path(), 7, 0);
  save_step(root.path(), 9, 0);
  fs::create_directories(root / ".tmp-step_000000011");  // an interrupted save is not a checkpoint
  fs::remove(root / "latest");
  CHECK(latest_checkpoint(root.path()) == root / step_name(9));
  write_latest(root.path(), "../../etc", false);
  CHECK(latest_checkpoint(root.path()) == root / step_name(9));
  write_latest(root.path(), step_name(7), false);
  CHECK(latest_checkpoint(root.path()) == root / step_name(7));
}

TEST_CASE("save refuses bad names and an existing checkpoint, leaving nothing behind") {
  testing::TempDir root;
  save_step(root.path(), 1, 0);
  CHECK_THROWS_WITH_AS(save_step(root.path(), 1, 0),
                       doctest::Contains("step_000000001 already exists"), Error);
  SingleRank single;
  RankState state;
  state.add_value("x", int64_t{1});
  for (const std::string name : {"", ".hidden", "latest", "a/b"}) {
    CAPTURE(name);
    CHECK_THROWS_AS(save(single, state, {.root = root.path(), .name = name}), Error);
  }
  for (const fs::directory_entry& item : fs::directory_iterator(root.path()))
    CHECK_MESSAGE(!item.path().filename().string().starts_with("."), item.path().string());
}

TEST_CASE("save: ranks that disagree on their entries or overlap their rows fail on every rank") {
  testing::TempDir root;
  std::vector<std::string> errors(2);
  run_ranks(2, [&](Coordinator& coordinator) {
    RankState state;
    state.add_rows("w", testing::patterned({2, 3}, kFloat32, 1), {3, 3}, coordinator.rank());
    try {
      save(coordinator, state, {.root = root.path(), .name = "step_000000001", .durable = false});
    } catch (const Error& error) {
      errors[coordinator.rank()] = error.what();
    }
  });
  CHECK(errors[0].find("entry 'w' rows [1, 2) are covered twice") != std::string::npos);
  CHECK(errors[1] == errors[0]);
  CHECK(steps(root.path()).empty());
  CHECK(!fs::exists(root / ".tmp-step_000000001"));

  run_ranks(2, [&](Coordinator& coordinator) {
    RankState state;
    if (coordinator.rank() == 0) state.add_replicated("only_on_rank_0", testing::patterned({2}, kInt32, 1));
    try {
      save(coordinator, state, {.root = root.path(), .name = "step_000000002", .durable = false});
    } catch (const Error& error) {
      errors[coordinator.rank()] = error.what();
    }
  });
  CHECK(errors[0].find("rank 1 declares entries [] but rank 0 declares") != std::string::npos);
  CHECK(errors[1] == errors[0]);
}

}  // namespace
}  // namespace ember::ckpt::test_retention
