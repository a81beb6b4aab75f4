// A class-index loss call (cross_entropy, nll_loss and their backward ops) as its kernels read
// it: scores [rows, classes] with any strides, int64 targets [rows], and the attributes. Plain
// data, shared by the CPU kernels (kernels/cpu/class_loss.h, which also fills it from a call) and
// the CUDA ones (kernels/cuda/loss.h, whose arguments add the device's own fields).
#pragma once

#include <cstdint>

namespace ember {

struct ClassLossLayout {
  int64_t rows = 1;
  int64_t classes = 0;
  int64_t row_stride = 0;
  int64_t class_stride = 1;
  const int64_t* target = nullptr;
  int64_t target_stride = 0;
  int64_t reduction = 1;  // 0 none, 1 mean, 2 sum
  int64_t ignore_index = -100;
  double label_smoothing = 0.0;
};

}  // namespace ember
