// layer_norm forward and backward through cuDNN 9's graph API (CUDNN_LAYER_NORM), with one
// execution plan per (direction, device, dtype, rows, cols) built on first use and cached.
// Used by runtime/cuda/norm_cuda_ops.cpp when EMBER_LAYER_NORM selects cuDNN.
#pragma once

#include "kernels/cuda/layer_norm.h"

namespace ember::cuda {

// `args` as for ember's kernels except that weight, bias, grad_weight and grad_bias point to
// float32 data whatever args.dtype is (cuDNN's convention; norm_cuda_ops.cpp converts).
// Each runs the call with cuDNN on CUDA device `device_index` (already current) and returns true,
// or returns false without touching the outputs when cuDNN cannot run it: a build without cuDNN,
// float64, no weight or bias, pointers not 16-byte aligned, or no cuDNN engine for the shape
// (remembered, so the heuristics are asked once per shape). Throws ember::Error when cuDNN
// accepted the call and then failed to run it.
bool cudnn_layer_norm_forward(const LayerNormForward& args, int device_index);
bool cudnn_layer_norm_backward(const LayerNormBackward& args, int device_index);

}  // namespace ember::cuda
