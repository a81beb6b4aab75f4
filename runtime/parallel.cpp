// Thread-count control shared by OpenMP loops and Eigen.
#include "runtime/parallel.h"

#include <omp.h>

#include <Eigen/Core>
#include <charconv>
#include <cstdlib>
#include <cstring>

#include "runtime/error.h"

namespace ember {

namespace {
int& thread_count() {
  static int count = [] {
    int threads = omp_get_num_procs();
    if (const char* forced = std::getenv("EMBER_NUM_THREADS")) {
      // atoi read "abc" as 0 (then one thread) and "100000" as a count libgomp cannot start.
      const char* end = forced + std::strlen(forced);
      const auto [stop, error] = std::from_chars(forced, end, threads);
      check(error == std::errc() && stop == end && threads >= 1 && threads <= kMaxThreads,
            "EMBER_NUM_THREADS must be a whole number from 1 to {}, got '{}'", kMaxThreads, forced);
    }
    omp_set_num_threads(threads);
    Eigen::setNbThreads(threads);
    return threads;
  }();
  return count;
}
}  // namespace

int get_num_threads() { return thread_count(); }

void set_num_threads(int threads, std::source_location where) {
  CallSiteScope site(where);
  check(threads >= 1 && threads <= kMaxThreads, "set_num_threads: expected 1 to {} threads, got {}", kMaxThreads,
        threads);
  thread_count() = threads;
  omp_set_num_threads(threads);
  Eigen::setNbThreads(threads);
}

}  // namespace ember
