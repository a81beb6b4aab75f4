// Host-side entry points of the multi-tensor optimizer steps (kernels/cuda/multi_tensor_optim.cu):
// one launch updates up to kMultiTensorCapacity contiguous parameters of one dtype and their
// state, with the functors of kernels/optim_functors.h (the math of the per-parameter kernels).
// The table travels as a kernel parameter (under the classic 4 KiB limit), so a launch allocates
// nothing and a captured CUDA graph keeps it. Plain C++ with no CUDA header.
#pragma once

#include <cstdint>

#include "kernels/cuda/optim.h"  // SgdStepAttrs, AdamStepAttrs, kMaxStepTensors

namespace ember::cuda {

constexpr int kMultiTensorCapacity = 48;
// Elements per chunk: a block updates one chunk at a time, so a big tensor spreads over many
// blocks and a small one takes one block (16 Ki elements = 64 per thread of a 256-thread block).
constexpr int64_t kMultiTensorChunk = 16 * 1024;

// Tensors 0..count-1, each dense and of `numel[t]` elements (no empty ones). data[role][t]:
// role 0 the parameter, 1 the gradient, 2.. the state in the per-parameter op's input order
// (SGD: momentum buffer; Adam: exp_avg, exp_avg_sq, max_exp_avg_sq). first_chunk[t] is the
// number of chunks of tensors before t; first_chunk[count] is the launch's total.
struct MultiTensorTable {
  int count = 0;
  int64_t numel[kMultiTensorCapacity] = {};
  int64_t first_chunk[kMultiTensorCapacity + 1] = {};
  void* data[kMaxStepTensors][kMultiTensorCapacity] = {};
};
static_assert(sizeof(MultiTensorTable) + 128 <= 4096, "a multi-tensor launch's parameters must fit in 4 KiB");

// Appends tensor t's chunk count; the caller fills numel and data first.
inline void close_table_entry(MultiTensorTable& table) {
  const int t = table.count++;
  table.first_chunk[t + 1] = table.first_chunk[t] + (table.numel[t] + kMultiTensorChunk - 1) / kMultiTensorChunk;
}

// attrs as for the per-parameter launchers; roles used: SGD 0, 1 and (momentum != 0) 2; Adam 0-3
// and (amsgrad) 4.
int launch_multi_sgd_step(DType dtype, const MultiTensorTable& table, const SgdStepAttrs& attrs, void* stream);
int launch_multi_adam_step(DType dtype, const MultiTensorTable& table, const AdamStepAttrs& attrs, void* stream);

}  // namespace ember::cuda
