// ThreadGroup collectives: every rank gets the right messages even when ranks run at different
// speeds through many back-to-back collectives (the slots are reused by turns).
#include <doctest/doctest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "ckpt/coordinator.h"
#include "runtime/error.h"
#include "tests/skip_case.h"

namespace test_coordinator {

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

namespace {

// In a child process: the outcome of run_ranks(64) under an address-space limit that only a few
// rank threads' stacks fit in.
std::string run_ranks_out_of_threads() {
  long pages = 0;
  std::ifstream("/proc/self/statm") >> pages;
  rlimit limit{};
  ::getrlimit(RLIMIT_AS, &limit);
  limit.rlim_cur = static_cast<rlim_t>(pages) * ::sysconf(_SC_PAGESIZE) + (rlim_t{32} << 20);
  if (::setrlimit(RLIMIT_AS, &limit) != 0) return "setrlimit failed";
  std::atomic<int> ran{0};
  std::string outcome = "no error";
  try {
    run_ranks(64, [&](Coordinator&) { ++ran; });
  } catch (const ember::Error& error) {
    outcome = error.what();
  }
  return outcome + "\nranks that ran: " + std::to_string(ran.load());
}

}  // namespace

TEST_CASE("run_ranks: a rank thread that cannot start is an error, and no rank runs or is left behind") {
#if defined(__SANITIZE_ADDRESS__)
  ember::testing::skip_case("AddressSanitizer's shadow memory does not fit an address-space limit");
  return;
#endif
  int pipe_ends[2];
  REQUIRE(::pipe(pipe_ends) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {  // before the fix: std::terminate, as the joinable threads were destroyed
    ::close(pipe_ends[0]);
    const std::string outcome = run_ranks_out_of_threads();
    const ssize_t written = ::write(pipe_ends[1], outcome.data(), outcome.size());
    ::_exit(written == static_cast<ssize_t>(outcome.size()) ? 0 : 3);
  }
  ::close(pipe_ends[1]);
  std::string outcome;
  char buffer[512];
  for (ssize_t got; (got = ::read(pipe_ends[0], buffer, sizeof buffer)) > 0;) outcome.append(buffer, got);
  ::close(pipe_ends[0]);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CAPTURE(outcome);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(outcome.starts_with("run_ranks: could not start the thread of rank "));
  CHECK(outcome.find(" of 64 (Resource temporarily unavailable); no rank ran") != std::string::npos);
  CHECK(outcome.ends_with("\nranks that ran: 0"));
}

}  // namespace test_coordinator
