// The `cnn` reference model (cnn_model.h) and its FLOP count.
#include "tools/ember-bench/cnn_model.h"

#include <vector>

#include "runtime/nn/modules/conv.h"

namespace ember::bench {

namespace {

struct ConvLayer {
  int64_t in, out, stride;
};
constexpr int64_t kKernel = 3, kPadding = 1;
const std::vector<ConvLayer> kLayers = {{1, 16, 1}, {16, 32, 2}, {32, 64, 2}};

int64_t out_size(int64_t size, int64_t stride) { return (size + 2 * kPadding - kKernel) / stride + 1; }

}  // namespace

nn::Sequential build_cnn(Device device) {
  nn::Sequential model;
  int64_t side = kCnnImage[1];
  for (const ConvLayer& layer : kLayers) {
    model->push_back(
        nn::Conv2d(layer.in, layer.out, kKernel, {.stride = layer.stride, .padding = kPadding, .device = device}));
    model->push_back(nn::ReLU());
    side = out_size(side, layer.stride);
  }
  model->push_back(nn::Flatten());
  model->push_back(nn::Linear(kLayers.back().out * side * side, kCnnClasses, {.device = device}));
  return model;
}

double cnn_step_flops(int64_t batch) {
  double forward = 0.0, first = 0.0;  // multiply-adds per sample
  int64_t side = kCnnImage[1];
  for (const ConvLayer& layer : kLayers) {
    side = out_size(side, layer.stride);
    const double macs = static_cast<double>(side * side * layer.out * layer.in * kKernel * kKernel);
    if (forward == 0.0) first = macs;
    forward += macs;
  }
  forward += static_cast<double>(kLayers.back().out * side * side * kCnnClasses);
  // forward + weight gradients + input gradients (none for the data), 2 FLOPs per multiply-add.
  return 2.0 * static_cast<double>(batch) * (3.0 * forward - first);
}

}  // namespace ember::bench
