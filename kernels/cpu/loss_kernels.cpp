// nll_loss, its backward and mse_loss on the CPU, and the class-index losses' shared checks
// (class_loss.h); cross_entropy is in cross_entropy_kernels.cpp. Losses are summed over rows in
// row order, so results do not depend on the thread count.
#include "kernels/cpu/loss_kernels.h"

#include <cmath>
#include <string_view>
#include <vector>

#include "kernels/cpu/class_loss.h"
#include "kernels/cpu/parallel_for.h"
#include "kernels/cpu/pointwise_loop.h"

namespace ember::cpu {

ClassLossLayout class_loss_layout(const OpCall& call, const Tensor& scores, const Tensor& target) {
  ClassLossLayout layout;
  const int rank = scores.dim();
  layout.rows = rank == 2 ? scores.sizes()[0] : 1;
  layout.classes = scores.sizes()[rank - 1];
  layout.row_stride = rank == 2 ? scores.strides()[0] : 0;
  layout.class_stride = scores.strides()[rank - 1];
  layout.target = static_cast<const int64_t*>(target.raw_data_ptr());
  layout.target_stride = target.dim() == 1 ? target.strides()[0] : 0;
  layout.reduction = call.attrs.get<int64_t>("reduction");
  layout.ignore_index = call.attrs.get<int64_t>("ignore_index");
  layout.label_smoothing = call.attrs.get_or<double>("label_smoothing", 0.0);
  return layout;
}

ClassLoss class_loss(const OpCall& call, const Tensor& scores, const Tensor& target) {
  ClassLoss loss;
  static_cast<ClassLossLayout&>(loss) = class_loss_layout(call, scores, target);
  const std::string_view op = call.op.name.starts_with("cross_entropy") ? "cross_entropy" : "nll_loss";
  for (int64_t row = 0; row < loss.rows; ++row) {
    if (loss.ignored(row)) continue;
    const int64_t value = loss.target_of(row);
    check(value >= 0 && value < loss.classes, "{}: target {} at position {} is out of range for {} classes", op,
          value, row, loss.classes);
    ++loss.counted;
  }
  return loss;
}

namespace {

// Sums per-row losses in row order (rows run in parallel into a buffer when there are many).
template <typename RowLoss>
double total_loss(const ClassLoss& loss, RowLoss&& row_loss) {
  if (!runs_in_parallel(loss)) {
    double total = 0.0;
    for (int64_t row = 0; row < loss.rows; ++row) total += row_loss(row);
    return total;
  }
  std::vector<double> per_row(loss.rows);
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < loss.rows; ++row) per_row[row] = row_loss(row);
  double total = 0.0;
  for (double value : per_row) total += value;
  return total;
}

// Writes the per-row losses (reduction none) or their sum / mean into `output`.
template <typename T, typename RowLoss>
void write_loss(const Tensor& output, const ClassLoss& loss, RowLoss&& row_loss) {
  T* out = output.data_ptr<T>();
  if (loss.reduction == kReductionNone) {
    parallel_for(loss.rows, runs_in_parallel(loss), [&](int64_t row) { out[row] = static_cast<T>(row_loss(row)); });
    return;
  }
  const double total = total_loss(loss, row_loss);
  out[0] = static_cast<T>(loss.reduction == kReductionMean ? total / static_cast<double>(loss.counted) : total);
}

template <typename T>
void nll_loss_typed(const Tensor& output, const Tensor& log_probs, const ClassLoss& loss) {
  const T* data = log_probs.data_ptr<T>();
  write_loss<T>(output, loss, [&](int64_t i) {
    if (loss.ignored(i)) return 0.0;
    const T value = data[i * loss.row_stride + loss.target_of(i) * loss.class_stride];
    return -static_cast<double>(static_cast<compute_t<T>>(value));
  });
}

template <typename T>
void nll_loss_backward_typed(const Tensor& grad_input, const Tensor& grad, const ClassLoss& loss) {
  T* out = grad_input.data_ptr<T>();
  const GradScale<T> scale_of = grad_scale<T>(grad, loss);
  for (int64_t i = 0; i < loss.rows; ++i) {
    T* out_row = out + i * loss.classes;
    for (int64_t c = 0; c < loss.classes; ++c) out_row[c] = static_cast<T>(0.0f);
    if (!loss.ignored(i)) out_row[loss.target_of(i)] = static_cast<T>(-scale_of(i));
  }
}

// Squares of differences summed in double; broadcast or strided operands go through a buffer.
template <typename T>
void mse_loss_typed(const Tensor& output, const Tensor& input, const Tensor& target, int64_t reduction) {
  auto squared_difference = [](auto a, auto b) { return (a - b) * (a - b); };
  if (reduction == kReductionNone) {
    pointwise_cpu<T, T, T>(output, squared_difference, input, target);
    return;
  }
  const Dims shape = broadcast_shapes(input.sizes(), target.sizes(), "mse_loss");
  const int64_t count = shape.product();
  double total = 0.0;
  if (input.sizes() == target.sizes() && input.is_contiguous() && target.is_contiguous()) {
    const T* a = input.data_ptr<T>();
    const T* b = target.data_ptr<T>();
    for (int64_t i = 0; i < count; ++i) {
      const double difference = static_cast<double>(static_cast<compute_t<T>>(a[i])) -
                                static_cast<double>(static_cast<compute_t<T>>(b[i]));
      total += difference * difference;
    }
  } else {
    const Tensor squares = make_tensor(shape, input.dtype(), input.device());
    pointwise_cpu<T, T, T>(squares, squared_difference, input, target);
    const T* values = squares.data_ptr<T>();
    for (int64_t i = 0; i < count; ++i) total += static_cast<double>(static_cast<compute_t<T>>(values[i]));
  }
  output.data_ptr<T>()[0] = static_cast<T>(reduction == kReductionMean ? total / static_cast<double>(count) : total);
}

}  // namespace

void nll_loss_kernel(const OpCall& call, TensorList& outputs) {
  const ClassLoss loss = class_loss(call, call.input(0), call.input(1));
  dispatch_floating(call.input(0).dtype(), "nll_loss", [&](auto zero) {
    nll_loss_typed<decltype(zero)>(outputs[0], call.input(0), loss);
  });
}

void nll_loss_backward_kernel(const OpCall& call, TensorList& outputs) {
  const ClassLoss loss = class_loss(call, call.input(1), call.input(2));
  dispatch_floating(call.input(1).dtype(), "nll_loss_backward", [&](auto zero) {
    nll_loss_backward_typed<decltype(zero)>(outputs[0], call.input(0), loss);
  });
}

void mse_loss_kernel(const OpCall& call, TensorList& outputs) {
  dispatch_floating(call.input(0).dtype(), "mse_loss", [&](auto zero) {
    mse_loss_typed<decltype(zero)>(outputs[0], call.input(0), call.input(1), call.attrs.get<int64_t>("reduction"));
  });
}

}  // namespace ember::cpu
