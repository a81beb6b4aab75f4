// parallel_for: a loop over [0, count) that uses the OpenMP team only when asked to.
#pragma once

#include <algorithm>
#include <cstdint>

#include "runtime/parallel.h"

namespace ember::cpu {

// Runs body(i) for every i in [0, count), split statically over the threads when `parallel`,
// inline on the calling thread otherwise. Why not `#pragma omp parallel for if (parallel)`:
// libgomp still opens and closes a one-thread team for a false `if`, and closing it wakes the
// team's barrier with a futex system call (0.4-0.7 µs on the dev VM). A seed training step runs
// a dozen small kernels, so that was 8-11% of it (docs/PERFORMANCE.md).
template <typename Body>
inline void parallel_for(int64_t count, bool parallel, Body&& body) {
  if (!parallel) {
    for (int64_t i = 0; i < count; ++i) body(i);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count; ++i) body(i);
}

// Runs body(begin, end) over [0, count) in chunks of kParallelGrain elements, split statically
// over the threads when there are several chunks and threads, else one after another. The chunks
// never depend on the thread count: which elements share a range, and so take a vectorized loop's
// vector body or its scalar remainder (which may round differently), is the same with any number
// of threads (the conformance suite checks 1 against 3 threads).
template <typename Body>
inline void parallel_ranges(int64_t count, Body&& body) {
  const int64_t chunks = (count + kParallelGrain - 1) / kParallelGrain;
  parallel_for(chunks, chunks > 1 && get_num_threads() > 1, [&](int64_t chunk) {
    body(chunk * kParallelGrain, std::min(count, (chunk + 1) * kParallelGrain));
  });
}

// Writes value_of(i), converted to T, to data[i] for every i in [0, count): the factories' fill,
// over the threads once count reaches kParallelGrain.
template <typename T, typename Value>
inline void generate(T* data, int64_t count, Value&& value_of) {
  parallel_for(count, count >= kParallelGrain, [&](int64_t i) { data[i] = static_cast<T>(value_of(i)); });
}

}  // namespace ember::cpu
