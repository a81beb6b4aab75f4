// parallel_for: a loop over [0, count) that uses the OpenMP team only when asked to.
#pragma once

#include <cstdint>

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

}  // namespace ember::cpu
