// Host-side entry point of the CUDA concatenation kernel (kernels/cuda/join.cu). Plain C++: the
// op file runtime/cuda/join_cuda_ops.cpp describes each input as a block of rows of bytes.
#pragma once

#include <cstdint>

namespace ember::cuda {

constexpr int kMaxCatPieces = 32;  // inputs per launch; more inputs take more launches

// One input of cat, contiguous and already in the output's dtype: `outer` rows of row_bytes bytes,
// row r going to out + offset_bytes + r * out_row_bytes.
struct CatPiece {
  const void* source = nullptr;
  int64_t row_bytes = 0;
  int64_t offset_bytes = 0;
};

struct CatBatch {
  void* out = nullptr;
  int64_t outer = 1;          // product of the output's sizes before dim
  int64_t out_row_bytes = 0;  // bytes of the output per outer index
  int count = 0;
  CatPiece pieces[kMaxCatPieces];
};

// Copies every piece of the batch in one launch; returns the cudaError_t as an int.
int launch_cat(const CatBatch& batch, void* stream);

}  // namespace ember::cuda
