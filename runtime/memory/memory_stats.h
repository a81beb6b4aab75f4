// Public memory statistics of a device's caching allocator (torch.cuda.memory_stats and friends).
#pragma once

#include "runtime/device.h"
#include "runtime/memory/caching_allocator.h"

namespace ember {

MemoryStats memory_stats(Device device = kCPU);
// Starts a new peak measurement from the current usage.
void reset_peak_memory_stats(Device device = kCPU);
// Returns cached, unused memory to the system (cudaFree / free).
void empty_cache(Device device = kCPU);

}  // namespace ember
