// Shared pieces of the checkpoint tests: temporary directories, patterned tensors, a reference
// training-like state of awkward shapes, and its split into the ranks of a layout.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "ckpt/state.h"
#include "runtime/ember.h"

namespace ember::ckpt::testing {

// A fresh directory under the system's temporary directory, removed with its contents at the end.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// A contiguous CPU tensor whose bytes are a pseudo-random function of `seed` (never all zeros).
Tensor patterned(const Dims& shape, DType dtype, uint64_t seed);
bool same_bytes(const Tensor& a, const Tensor& b);
bool same_value(const Value& a, const Value& b);

// A whole-model view: every entry's full tensor, whether it is sharded by rows, and small values.
struct Reference {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, bool> sharded;
  std::map<std::string, Value> values;
};

// Prime-sized, tiny, empty, 0-d and 16-bit tensors, with fewer rows than ranks for most layouts.
Reference awkward_reference(uint64_t seed);

// Rank `rank` of `world_size` holding its even_rows() of each sharded entry (views of the
// reference) and all of each replicated one.
RankState rank_view(const Reference& reference, int rank, int world_size);
// The same layout, but fresh tensors filled with another pattern and placeholder values of the
// right types: the live state a load must overwrite.
RankState live_state(const Reference& reference, int rank, int world_size, uint64_t junk_seed);
// Checks (doctest CHECKs) that `state` holds exactly the reference's rows and values.
void check_matches(const RankState& state, const Reference& reference);

// Every entry of the checkpoint read back whole: its tensors and values as a Reference.
Reference read_back(const std::filesystem::path& directory);

}  // namespace ember::ckpt::testing
