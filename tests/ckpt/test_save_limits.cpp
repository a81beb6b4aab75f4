// The writer refuses what the reader would refuse, before the commit: a checkpoint that save()
// returns always opens, and `latest` keeps naming one that does. Entry names (length, printable
// ASCII, not even valid UTF-8), the manifest's size and the checkpoint's own name are covered; a
// bad name on one rank fails every rank through the save's collectives instead of hanging them.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>

#include "ckpt/async_save.h"
#include "ckpt/reader.h"
#include "ckpt/retention.h"
#include "ckpt/writer.h"
#include "tests/ckpt/helpers.h"
#include "tests/error_of.h"

namespace ember::ckpt::test_save_limits {
namespace {

namespace fs = std::filesystem;

// Saves a [2] float32 tensor named `name` (and a train.config value when `config` is given) as step
// `step` on one rank; returns the save's error, or "".
std::string save_error(const fs::path& root, int64_t step, const std::string& name,
                       const std::string& config = "") {
  RankState state;
  state.add_replicated(name, testing::patterned({2}, kFloat32, 3));
  if (!config.empty()) state.add_value("train.config", config);
  SingleRank single;
  try {
    save(single, state, {.root = root, .name = step_name(step), .durable = false});
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

// Everything in root, sorted: a refused save leaves nothing of its own (no .tmp-*) there.
std::vector<std::string> root_listing(const fs::path& root) {
  std::vector<std::string> names;
  for (const fs::directory_entry& item : fs::directory_iterator(root))
    names.push_back(item.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST_CASE("save: an entry name longer than the reader's 4096 bytes is refused before the commit") {
  testing::TempDir root;
  REQUIRE(save_error(root.path(), 1, "w") == "");
  CHECK(save_error(root.path(), 2, std::string(4096, 'v')) == "");  // the longest name that reads
  CHECK(CheckpointReader(root / step_name(2)).manifest().entries[0].name.size() == 4096);
  CHECK(save_error(root.path(), 3, std::string(5000, 'w')) ==
        "checkpoint save: entry name '" + std::string(40, 'w') +
            "...' has 5000 bytes, more than the 4096 a reader accepts");
  CHECK(root_listing(root.path()) == std::vector<std::string>{"latest", step_name(1), step_name(2)});
  CHECK(latest_checkpoint(root.path()) == root / step_name(2));
}

TEST_CASE("save: a manifest larger than the reader's 64 MiB is refused before the commit") {
  testing::TempDir root;
  REQUIRE(save_error(root.path(), 1, "w") == "");
  // One string value of 64 MiB: the manifest holds it plus the rest of the checkpoint.
  const std::string error = save_error(root.path(), 2, "w", std::string(kMaxManifestBytes, 'x'));
  const std::string expected_end = " bytes, more than the 67108864 bytes (64 MiB) a reader accepts; save "
                                   "fewer entries or chunks (small tensors replicated, not split over many "
                                   "ranks), or large data as tensors rather than values";
  CHECK(error.starts_with("checkpoint " + (root / step_name(2)).string() + ": the manifest would be 6710"));
  CHECK(error.ends_with(expected_end));
  CHECK(root_listing(root.path()) == std::vector<std::string>{"latest", step_name(1)});
  CHECK(latest_checkpoint(root.path()) == root / step_name(1));
}

TEST_CASE("save: a name that is not printable ASCII (here not even UTF-8) is an ember error naming it") {
  testing::TempDir root;
  CHECK(save_error(root.path(), 1, "caf\xe9") ==
        "checkpoint save: entry name 'caf\\xe9' has byte 0xe9 at offset 3; names are printable ASCII");
  CHECK(save_error(root.path(), 1, "tab\there") ==
        "checkpoint save: entry name 'tab\\x09here' has byte 0x09 at offset 3; names are printable ASCII");
  CHECK(root_listing(root.path()).empty());  // no .tmp-step_000000001 left
  // On one rank only: that rank's error reaches rank 0 through the gather (before, rank 1 threw
  // while serializing its message and rank 0 waited in the gather forever).
  std::vector<std::string> errors(2);
  run_ranks(2, [&](Coordinator& coordinator) {
    RankState state;
    state.add_replicated(coordinator.rank() == 1 ? "caf\xe9" : "cafe", testing::patterned({2}, kFloat32, 1));
    state.add_value(coordinator.rank() == 1 ? "n\xc3\xa9" : "ne", int64_t{1});
    try {
      save(coordinator, state, {.root = root.path(), .name = "ck", .durable = false});
    } catch (const Error& error) {
      errors[coordinator.rank()] = error.what();
    }
  });
  CHECK(errors[0] == "rank 1: checkpoint save: entry name 'caf\\xe9' has byte 0xe9 at offset 3; names are "
                     "printable ASCII");
  CHECK(errors[1] == errors[0]);
  CHECK(root_listing(root.path()).empty());
}

TEST_CASE("save: a checkpoint name whose temporary directory would not fit NAME_MAX is refused") {
  testing::TempDir root;
  SingleRank single;
  RankState state;
  state.add_value("x", int64_t{1});
  const fs::path longest = save(single, state, {.root = root.path(), .name = std::string(250, 'c'), .durable = false});
  CHECK(CheckpointReader(longest).value("x") == Value{int64_t{1}});
  for (const size_t bytes : {251, 255, 256}) {
    CAPTURE(bytes);
    const std::string name(bytes, 'd');
    CHECK_THROWS_WITH_AS(save(single, state, {.root = root.path(), .name = name, .durable = false}),
                         ("checkpoint: name '" + name + "' has " + std::to_string(bytes) +
                          " bytes; names have 1 to 250 bytes (the save's temporary directory .tmp-NAME "
                          "must fit the file system's 255-byte limit)").c_str(),
                         Error);
  }
  CHECK(root_listing(root.path()) == std::vector<std::string>{std::string(250, 'c'), "latest"});
}

TEST_CASE("save: an empty root, a root under a file and max_in_flight 0 are refused, naming the value") {
  testing::TempDir scratch;
  RankState state;
  state.add_replicated("w", testing::patterned({2}, kFloat32, 3));
  SingleRank single;
  // std::filesystem's errors used to escape: "cannot create directories: Invalid argument []".
  CHECK(ember::testing::error_of([&] { save(single, state, {.root = "", .name = "x"}); }) ==
        "checkpoint save: SaveOptions::root is empty; give the directory that holds the checkpoints (\".\" for "
        "the current one)");
  std::ofstream(scratch / "file") << "x";
  const fs::path under_file = scratch / "file" / "x";
  CHECK(ember::testing::error_of([&] { save(single, state, {.root = under_file, .name = "x"}); }) ==
        "checkpoint save: cannot create root " + under_file.string() + ": Not a directory");
  // It used to name an internal class: "HostBufferPool: needs at least one buffer, got 0".
  const int line = __LINE__ + 1;
  const std::string message = ember::testing::error_of([&] { AsyncCheckpointer checkpointer(single, 0); });
  CHECK(message.starts_with("AsyncCheckpointer: max_in_flight must be at least 1 (saves queued or writing at "
                            "once), got 0 at "));
  CHECK(ember::testing::names_line(message, line));
}

}  // namespace
}  // namespace ember::ckpt::test_save_limits
