// The padding_idx rule torch.nn's embedding layers share: within [-num_embeddings, num_embeddings),
// counted from the end when negative. Used by embedding, F::embedding(_bag) and their modules.
#pragma once

#include <cstdint>

#include "runtime/error.h"

namespace ember {

// padding_idx wrapped into [0, num_embeddings); the error names `op` and the allowed range.
inline int64_t wrap_padding_idx(const char* op, int64_t padding_idx, int64_t num_embeddings) {
  check(padding_idx >= -num_embeddings && padding_idx < num_embeddings,
        "{}: padding_idx must be within num_embeddings {} (from {} to {}), got {}", op, num_embeddings,
        -num_embeddings, num_embeddings - 1, padding_idx);
  return padding_idx < 0 ? padding_idx + num_embeddings : padding_idx;
}

}  // namespace ember
