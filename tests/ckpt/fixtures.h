// Test fixtures without doctest (the crash-test helper process uses them too): patterned tensors,
// a reference state of awkward shapes, its split into the ranks of a layout, and reading it back.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "ckpt/state.h"
#include "runtime/ember.h"

namespace ember::ckpt::testing {

// A contiguous CPU tensor whose bytes are a pseudo-random function of `seed` (never all zeros).
Tensor patterned(const Dims& shape, DType dtype, uint64_t seed);
bool same_bytes(const Tensor& a, const Tensor& b);
bool same_value(const Value& a, const Value& b);
// A copy that keeps every bit (clone() converts 16-bit floats through fp32, altering NaN payloads).
Tensor byte_clone(const Tensor& tensor);

// A whole-model view: every entry's full tensor, whether it is sharded by rows, and small values.
struct Reference {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, bool> sharded;
  std::map<std::string, Value> values;
};

// Prime-sized, tiny, empty, 0-d and 16-bit tensors, with fewer rows than ranks for most layouts.
Reference awkward_reference(uint64_t seed);

// What the crash-safety test saves at `step` (3 ranks): the awkward reference and a 400 KB tensor.
Reference crash_reference(int64_t step);
constexpr int kCrashWorldSize = 3;

// Rank `rank` of `world_size` holding its even_rows() of each sharded entry (views of the
// reference) and all of each replicated one.
RankState rank_view(const Reference& reference, int rank, int world_size);
// The same layout, but fresh tensors filled with another pattern and placeholder values of the
// right types: the live state a load must overwrite.
RankState live_state(const Reference& reference, int rank, int world_size, uint64_t junk_seed);
// Every entry of the checkpoint read back whole: its tensors and values as a Reference.
Reference read_back(const std::filesystem::path& directory);

}  // namespace ember::ckpt::testing
