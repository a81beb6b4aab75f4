// Intra-op threading: how many threads CPU kernels (our loops and Eigen's GEMM) may use.
#pragma once

#include <cstdint>
#include <source_location>

namespace ember {

// At most this many: each is an OpenMP worker, and libgomp crashes starting 100,000 of them.
constexpr int kMaxThreads = 1024;

// Defaults to the number of cores; EMBER_NUM_THREADS (1 to kMaxThreads) overrides. Results never
// depend on it.
int get_num_threads();
void set_num_threads(int threads, std::source_location where = std::source_location::current());

// Work below this many elements runs on one thread: waking threads costs more than it saves.
constexpr int64_t kParallelGrain = 32768;

}  // namespace ember
