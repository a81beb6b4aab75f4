// ember-bench's convolutional reference model, `cnn`: MNIST-shaped images [1, 28, 28] through
//   Conv2d(1,16,3,p1)-ReLU-Conv2d(16,32,3,s2,p1)-ReLU-Conv2d(32,64,3,s2,p1)-ReLU-Flatten-Linear(3136,10)
// (strided convolutions downsample, as in ResNet-style stems), batch 64, Adam lr 1e-3.
#pragma once

#include <cstdint>

#include "runtime/ember.h"

namespace ember::bench {

// Each sample's shape, [channels, height, width].
inline const Dims kCnnImage = {1, 28, 28};
inline constexpr int64_t kCnnClasses = 10;

nn::Sequential build_cnn(Device device);

// FLOPs of one training step of `batch` samples: 2 per multiply-add of every convolution and the
// Linear, in the forward, the weight gradients, and the input gradients of all layers but the first.
double cnn_step_flops(int64_t batch);

}  // namespace ember::bench
