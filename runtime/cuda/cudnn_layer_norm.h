// layer_norm forward and backward through cuDNN 9's graph API (CUDNN_LAYER_NORM), with one
// execution plan per (direction, device, dtype, rows, cols) built on first use and cached.
// Used by runtime/cuda/norm_cuda_ops.cpp when EMBER_LAYER_NORM selects cuDNN.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/cuda/layer_norm.h"

namespace ember::cuda {

// `args` as for ember's kernels except that weight, bias, grad_weight and grad_bias point to
// float32 data whatever args.dtype is (cuDNN's convention; norm_cuda_ops.cpp converts).
// Each runs the call with cuDNN on CUDA device `device_index` (already current) and returns true,
// or returns false without touching the outputs when cuDNN cannot run it: a build without cuDNN,
// float64, no weight or bias, pointers not 16-byte aligned, no cuDNN engine for the shape
// (remembered, so the heuristics are asked once per shape), no cuDNN handle, or a CUDA-graph
// capture on this thread while the handle or plan has not been made yet. Throws ember::Error
// when cuDNN accepted the call and then failed to run it.
bool cudnn_layer_norm_forward(const LayerNormForward& args, int device_index);
bool cudnn_layer_norm_backward(const LayerNormBackward& args, int device_index);

// How many calls cuDNN has run (forward or backward) in this process, so tests can check that
// EMBER_LAYER_NORM=cudnn really reached cuDNN instead of silently falling back to ember's kernels.
int64_t cudnn_layer_norm_runs(bool backward);
// Why cuDNN has no plan for this call on the calling thread (plans are per thread, each built with
// that thread's handle; empty when it has one or was never asked): cuDNN's own
// message when building the plan threw, else the reason build_plan gave.
std::string cudnn_layer_norm_refusal(bool backward, int device_index, DType dtype, int64_t rows, int64_t cols);

// The most plans kept (default 512, each with its refusals): a shape that finds the cache full runs
// ember's kernels, and its refusal says so. No plan is ever destroyed (a captured graph may launch
// its kernels). Tests lower the limit; cudnn_plan_count is how many are held now.
void set_cudnn_plan_limit(size_t plans);
size_t cudnn_plan_count();

}  // namespace ember::cuda
