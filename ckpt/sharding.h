// How tensors are split along dim 0 across ranks: row ranges and the balanced split ember uses
// when it chooses a layout (saving from simulated ranks, resharding, the CLI). A checkpoint itself
// records whatever row ranges the saving ranks held, so any other layout (FSDP's) loads too.
#pragma once

#include <cstdint>

#include "runtime/error.h"

namespace ember::ckpt {

struct RowRange {
  int64_t begin = 0;
  int64_t end = 0;

  int64_t size() const { return end - begin; }
  bool empty() const { return end <= begin; }
  friend bool operator==(const RowRange&, const RowRange&) = default;
};

// The rows of [0, rows) that `rank` of `world_size` holds: the first rows % world_size ranks get
// one extra row, so sizes differ by at most one and ranks past the last row get an empty range.
constexpr RowRange even_rows(int64_t rows, int rank, int world_size) {
  const int64_t base = rows / world_size;
  const int64_t extra = rows % world_size;
  const int64_t begin = rank * base + (rank < extra ? rank : extra);
  return {begin, begin + base + (rank < extra ? 1 : 0)};
}

// The overlap of two row ranges (empty when they are disjoint).
constexpr RowRange intersect(RowRange a, RowRange b) {
  const int64_t begin = a.begin > b.begin ? a.begin : b.begin;
  const int64_t end = a.end < b.end ? a.end : b.end;
  return {begin, end > begin ? end : begin};
}

}  // namespace ember::ckpt
