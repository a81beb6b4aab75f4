// A checkpoint directory is untrusted: a FIFO where a manifest, a data file or the `latest` pointer
// should be is refused (or, for `latest`, ignored) at once. Opening a FIFO for reading used to wait
// for a writer, so every reader hung forever.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <future>

#include "ckpt/reader.h"
#include "ckpt/retention.h"
#include "ckpt/writer.h"
#include "tests/ckpt/helpers.h"

namespace ember::ckpt::test_special_files {
namespace {

namespace fs = std::filesystem;

// Runs `body` on a thread and returns its ember::Error message ("" when it returns normally). When
// it is still blocked after 30 s, opening `fifo` for writing releases it and the case fails, so a
// regression fails the test instead of hanging it.
std::string error_within_deadline(const fs::path& fifo, const std::function<void()>& body) {
  std::future<std::string> result = std::async(std::launch::async, [&] {
    try {
      body();
    } catch (const Error& error) {
      return std::string(error.what());
    }
    return std::string();
  });
  if (result.wait_for(std::chrono::seconds(30)) == std::future_status::timeout) {
    const int writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // ends the reader's wait
    FAIL_CHECK("still blocked on the FIFO " << fifo.string() << " after 30 s");
    if (writer >= 0) ::close(writer);
  }
  return result.get();
}

void save_step(const fs::path& root, int64_t step) {
  RankState state;
  state.add_replicated("w", testing::patterned({3, 2}, kFloat32, 1));
  SingleRank single;
  save(single, state, {.root = root, .name = step_name(step), .durable = false});
}

void replace_with_fifo(const fs::path& path) {
  fs::remove(path);
  REQUIRE(::mkfifo(path.c_str(), 0644) == 0);
}

TEST_CASE("special files: a FIFO named manifest.json or a data file is refused, not waited on") {
  testing::TempDir root;
  save_step(root.path(), 1);
  const fs::path directory = root / step_name(1);
  replace_with_fifo(directory / "rank_00000.bin");
  CHECK(error_within_deadline(directory / "rank_00000.bin", [&] { CheckpointReader reader(directory); }) ==
        "checkpoint: " + (directory / "rank_00000.bin").string() + " is not a regular file");

  replace_with_fifo(directory / kManifestFileName);
  CHECK(error_within_deadline(directory / kManifestFileName, [&] { CheckpointReader reader(directory); }) ==
        "checkpoint: " + (directory / kManifestFileName).string() + " is not a regular file");
}

TEST_CASE("special files: a FIFO named latest is ignored like any damaged pointer") {
  testing::TempDir root;
  save_step(root.path(), 1);
  save_step(root.path(), 2);
  replace_with_fifo(root / "latest");
  std::optional<fs::path> latest;
  CHECK(error_within_deadline(root / "latest", [&] { latest = latest_checkpoint(root.path()); }) == "");
  CHECK(latest == root / step_name(2));  // the newest committed checkpoint
  RetentionReport report;
  CHECK(error_within_deadline(root / "latest", [&] { report = apply_retention(root.path(), 1, false); }) == "");
  CHECK(report.removed == std::vector<std::string>{step_name(1)});
}

}  // namespace
}  // namespace ember::ckpt::test_special_files
