// Intra-op threading: how many threads CPU kernels (our loops and Eigen's GEMM) may use.
#pragma once

#include <cstdint>

namespace ember {

// Defaults to the number of cores; EMBER_NUM_THREADS overrides. Results never depend on it.
int get_num_threads();
void set_num_threads(int threads);

// Work below this many elements runs on one thread: waking threads costs more than it saves.
constexpr int64_t kParallelGrain = 32768;

}  // namespace ember
