// NormBaseImpl: what BatchNorm and InstanceNorm share, as PyTorch's _NormBase: the [C] weight and
// bias (with affine), the running estimates and num_batches_tracked (with track_running_stats),
// and their resets. Each layer keeps its own options, input checks and forward.
#pragma once

#include <optional>

#include "runtime/nn/module.h"

namespace ember::nn {

class NormBaseImpl : public Module {
 public:
  // running_mean to 0, running_var to 1, num_batches_tracked to 0 (nothing without running stats).
  void reset_running_stats();
  // reset_running_stats(), and weight to 1, bias to 0.
  void reset_parameters();

  Tensor weight;  // [C] parameters, undefined without affine
  Tensor bias;
  Tensor running_mean;  // [C] buffers, undefined without track_running_stats
  Tensor running_var;
  Tensor num_batches_tracked;  // 0-d int64 buffer: training forwards so far (InstanceNorm never counts)

 protected:
  // The options the shared state depends on, taken from a layer's own options struct.
  struct StateOptions {
    int64_t num_features = 0;
    bool affine = true;
    bool track_running_stats = true;
    DType dtype = DType::Float32;
    std::optional<Device> device = std::nullopt;
  };
  // The fields above of a layer's own options struct (BatchNormOptions, InstanceNormOptions).
  template <typename LayerOptions>
  static StateOptions state_options(const LayerOptions& options) {
    return {.num_features = options.num_features,
            .affine = options.affine,
            .track_running_stats = options.track_running_stats,
            .dtype = options.dtype,
            .device = options.device};
  }
  // Checks num_features >= 0 and a floating dtype (errors name `name` and the caller's `where`),
  // registers the parameters and buffers, and resets them.
  NormBaseImpl(const char* name, const StateOptions& options, Where where);

 private:
  bool track_running_stats_;
};

}  // namespace ember::nn
