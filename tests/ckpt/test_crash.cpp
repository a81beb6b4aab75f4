// Crash safety: a helper process saving step 3 (into a root holding steps 1 and 2, keep_last=2)
// is killed with SIGKILL at every durability point, and at random times. Afterwards the previous
// checkpoint always loads bit-exact, the new one is complete or absent, `latest` names a complete
// checkpoint, and the next save and retention clean up what the crash left.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "ckpt/reader.h"
#include "ckpt/retention.h"
#include "ckpt/writer.h"
#include "tests/ckpt/helpers.h"

namespace ember::ckpt::test_crash {
namespace {

namespace fs = std::filesystem;

struct Outcome {
  bool killed = false;  // died by SIGKILL
  int exit_code = -1;
};

// Runs the helper saving `step` into `root`; crash_at = 0 runs it to the end. `kill_after_us`,
// when positive, has this process send the SIGKILL instead.
Outcome run_helper(const fs::path& root, int64_t step, uint64_t crash_at, int kill_after_us = 0) {
  std::fflush(stdout);  // the child must not inherit and flush our buffered output
  std::fflush(stderr);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    if (crash_at > 0) ::setenv("EMBER_CKPT_CRASH_AT", std::to_string(crash_at).c_str(), 1);
    const int null_fd = ::open("/dev/null", O_WRONLY);
    if (null_fd < 0 || ::dup2(null_fd, STDOUT_FILENO) < 0) ::_exit(126);
    const std::string step_text = std::to_string(step);
    ::execl(EMBER_CKPT_CRASH_HELPER, EMBER_CKPT_CRASH_HELPER, root.c_str(), step_text.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  if (kill_after_us > 0) {
    std::this_thread::sleep_for(std::chrono::microseconds(kill_after_us));
    ::kill(child, SIGKILL);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  return {WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
          WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

uint64_t count_points(const fs::path& root) {
  // The helper prints its count; capture it through a pipe-less temporary file.
  const fs::path output = root / "points.txt";
  const std::string command = fmt::format("{} {} 1 > {}", EMBER_CKPT_CRASH_HELPER, (root / "r").string(),
                                          output.string());  // not operator+: GCC 12 -O1 warns falsely on it
  REQUIRE(std::system(command.c_str()) == 0);
  std::FILE* file = std::fopen(output.c_str(), "r");
  unsigned long long points = 0;
  REQUIRE(std::fscanf(file, "%llu", &points) == 1);
  std::fclose(file);
  return points;
}

void check_loads(const fs::path& directory, int64_t step) {
  const testing::Reference expected = testing::crash_reference(step);
  const testing::Reference actual = testing::read_back(directory);
  REQUIRE(actual.tensors.size() == expected.tensors.size());
  for (const auto& [name, tensor] : expected.tensors)
    CHECK_MESSAGE(testing::same_bytes(actual.tensors.at(name), tensor), name);
  CHECK(std::get<int64_t>(actual.values.at("step")) == step);
}

// The invariants after a crash while saving step 3 over steps 1 and 2.
void check_after_crash(const fs::path& root) {
  std::vector<int64_t> visible;
  for (const CheckpointInfo& info : list_checkpoints(root)) visible.push_back(info.step);
  const bool has_step_3 = std::find(visible.begin(), visible.end(), 3) != visible.end();
  CHECK(std::find(visible.begin(), visible.end(), 2) != visible.end());
  for (int64_t step : visible) check_loads(root / step_name(step), step);  // complete or absent
  // Nothing else is visible: a half-written or half-deleted checkpoint hides behind a dot.
  for (const fs::directory_entry& item : fs::directory_iterator(root)) {
    const std::string name = item.path().filename().string();
    const bool known = name == "latest" || name.starts_with(".") ||
                       (parse_step_name(name) && fs::exists(item.path() / kManifestFileName));
    CHECK_MESSAGE(known, name);
  }
  const std::optional<fs::path> latest = latest_checkpoint(root);
  REQUIRE(latest.has_value());
  CHECK((latest->filename() == step_name(2) || latest->filename() == step_name(3)));
  // Recovery: saving step 3 again (if it is missing) and retention leave no temporaries behind.
  // In-process and without fsync: what is checked here is the cleanup, not durability.
  if (!has_step_3) {
    const testing::Reference reference = testing::crash_reference(3);
    run_ranks(testing::kCrashWorldSize, [&](Coordinator& coordinator) {
      save(coordinator, testing::rank_view(reference, coordinator.rank(), testing::kCrashWorldSize),
           {.root = root, .name = step_name(3), .keep_last = 2, .durable = false});
    });
  }
  apply_retention(root, 2, false);
  for (const fs::directory_entry& item : fs::directory_iterator(root))
    CHECK_MESSAGE(!item.path().filename().string().starts_with(kTemporaryPrefix),
                  item.path().string());
  check_loads(root / step_name(3), 3);
  check_loads(root / step_name(2), 2);
}

TEST_CASE("crash safety: SIGKILL at every durability point of a save") {
  testing::TempDir scratch;
  const uint64_t points = count_points(scratch.path());
  MESSAGE("a save of step 1 passes ", points, " durability points");
  CHECK(points >= 20);
  testing::TempDir base;
  REQUIRE(run_helper(base.path(), 1, 0).exit_code == 0);
  REQUIRE(run_helper(base.path(), 2, 0).exit_code == 0);
  // Saving step 3 passes more points than saving step 1 did (retention removes step 1).
  for (uint64_t crash_at = 1; crash_at <= points + 2; ++crash_at) {
    CAPTURE(crash_at);
    testing::TempDir root;
    fs::copy(base.path(), root.path(), fs::copy_options::recursive);
    const Outcome outcome = run_helper(root.path(), 3, crash_at);
    CHECK((outcome.killed || outcome.exit_code == 0));
    check_after_crash(root.path());
  }
}

TEST_CASE("crash safety: SIGKILL from outside at random times") {
  testing::TempDir base;
  REQUIRE(run_helper(base.path(), 1, 0).exit_code == 0);
  REQUIRE(run_helper(base.path(), 2, 0).exit_code == 0);
  std::mt19937 random(12345);
  for (int trial = 0; trial < 8; ++trial) {
    const int delay_us = std::uniform_int_distribution<int>(500, 40000)(random);
    CAPTURE(delay_us);
    testing::TempDir root;
    fs::copy(base.path(), root.path(), fs::copy_options::recursive);
    run_helper(root.path(), 3, 0, delay_us);
    check_after_crash(root.path());
  }
}

}  // namespace
}  // namespace ember::ckpt::test_crash
