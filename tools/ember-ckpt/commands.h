// ember-ckpt's subcommands. Each prints to stdout and returns the process exit code; errors are
// thrown as ember::Error and printed by main().
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "runtime/tensor.h"

namespace ember::ckpt::cli {

// Entries with dtype, shape, sharding, chunks and bytes; values with their values. With `entry`,
// that one entry's data as JSON (what tools/ckpt_read.py's test compares against).
int inspect(const std::filesystem::path& directory, const std::string& entry, bool json);
// Every block checksum of every chunk; non-zero exit and the bad chunk named on failure.
int verify(const std::filesystem::path& directory);
int reshard(const std::filesystem::path& directory, int world_size, const std::filesystem::path& out);
// Per-entry equality and maximum absolute difference; exit 1 when anything differs.
int diff(const std::filesystem::path& first, const std::filesystem::path& second);
// The wide MLP's full training state after `steps` steps, saved as `world_size` ranks would.
int synth(const std::filesystem::path& out, int world_size, uint64_t seed, int steps);

// Timings of the wide MLP's state in `directory` (see docs/PERFORMANCE.md), as JSON.
int bench(const std::filesystem::path& directory, int world_size, int resharded_world, int repeat,
          int copies);

// A CPU contiguous tensor's elements as doubles (inspect.cpp).
std::vector<double> element_values(const Tensor& tensor);

}  // namespace ember::ckpt::cli
