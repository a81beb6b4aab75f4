// The process the crash-safety test kills: saves crash_reference(STEP) from 3 simulated ranks into
// ROOT with keep_last=2, then prints how many durability points it passed. Run with
// EMBER_CKPT_CRASH_AT=k to die by SIGKILL at the k-th point.
//   ckpt_crash_helper ROOT STEP
#include <cstdio>
#include <cstdlib>

#include "ckpt/file_io.h"
#include "ckpt/writer.h"
#include "tests/ckpt/fixtures.h"

int main(int argc, char** argv) {
  using namespace ember::ckpt;
  if (argc != 3) {
    std::fprintf(stderr, "usage: ckpt_crash_helper ROOT STEP\n");
    return 2;
  }
  const std::filesystem::path root = argv[1];
  const int64_t step = std::strtoll(argv[2], nullptr, 10);
  try {
    const testing::Reference reference = testing::crash_reference(step);
    run_ranks(testing::kCrashWorldSize, [&](Coordinator& coordinator) {
      save(coordinator, testing::rank_view(reference, coordinator.rank(), testing::kCrashWorldSize),
           {.root = root, .name = step_name(step), .keep_last = 2});
    });
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ckpt_crash_helper: %s\n", error.what());
    return 1;
  }
  std::printf("%llu\n", static_cast<unsigned long long>(durability_points_reached()));
  return 0;
}
