// ThreadGroup collectives: every rank gets the right messages even when ranks run at different
// speeds through many back-to-back collectives (the slots are reused by turns).
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <thread>

#include "ckpt/coordinator.h"

using namespace ember::ckpt;

namespace {

std::string message(int round, int rank) { return std::to_string(round) + ":" + std::to_string(rank); }

// Rank-dependent pauses so that some ranks run ahead into the next collective.
void stagger(int round, int rank) {
  if ((round + rank) % 3 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50 * rank));
}

}  // namespace

TEST_CASE("thread group: gather, broadcast and all_gather interleaved at uneven speeds") {
  for (const int world : {1, 2, 3, 8}) {
    CAPTURE(world);
    constexpr int kRounds = 60;
    std::vector<int> failures(world, 0);
    run_ranks(world, [&](Coordinator& coordinator) {
      const int rank = coordinator.rank();
      for (int round = 0; round < kRounds; ++round) {
        stagger(round, rank);
        switch (round % 3) {
          case 0: {
            const std::vector<std::string> all = coordinator.gather(message(round, rank));
            if (rank == 0) {
              for (int from = 0; from < world; ++from)
                failures[rank] += all.size() != static_cast<size_t>(world) || all[from] != message(round, from);
            } else {
              failures[rank] += !all.empty();
            }
            break;
          }
          case 1:
            failures[rank] += coordinator.broadcast(message(round, rank)) != message(round, 0);
            break;
          default: {
            const std::vector<std::string> all = coordinator.all_gather(message(round, rank));
            failures[rank] += all.size() != static_cast<size_t>(world);
            for (int from = 0; from < world && from < static_cast<int>(all.size()); ++from)
              failures[rank] += all[from] != message(round, from);
          }
        }
      }
    });
    for (int rank = 0; rank < world; ++rank) CHECK(failures[rank] == 0);
  }
}

TEST_CASE("agree_on_errors: every rank gets the lowest failing rank's error") {
  std::vector<std::string> verdicts(4);
  run_ranks(4, [&](Coordinator& coordinator) {
    const int rank = coordinator.rank();
    const std::string error = rank == 2 || rank == 3 ? "disk full on " + std::to_string(rank) : "";
    verdicts[rank] = agree_on_errors(coordinator, error);
  });
  for (const std::string& verdict : verdicts) CHECK(verdict == "rank 2: disk full on 2");
  SingleRank single;
  CHECK(agree_on_errors(single, "bad") == "bad");
  CHECK(agree_on_errors(single, "") == "");
}
