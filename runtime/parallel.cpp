// Thread-count control shared by OpenMP loops and Eigen.
#include "runtime/parallel.h"

#include <omp.h>

#include <Eigen/Core>
#include <cstdlib>

#include "runtime/error.h"

namespace ember {

namespace {
int& thread_count() {
  static int count = [] {
    int threads = omp_get_num_procs();
    if (const char* forced = std::getenv("EMBER_NUM_THREADS")) threads = std::max(1, std::atoi(forced));
    omp_set_num_threads(threads);
    Eigen::setNbThreads(threads);
    return threads;
  }();
  return count;
}
}  // namespace

int get_num_threads() { return thread_count(); }

void set_num_threads(int threads) {
  check(threads >= 1, "set_num_threads: expected at least one thread, got {}", threads);
  thread_count() = threads;
  omp_set_num_threads(threads);
  Eigen::setNbThreads(threads);
}

}  // namespace ember
