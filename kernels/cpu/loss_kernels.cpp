// cross_entropy (fused log_softmax + nll, one pass over each row), nll_loss, their backward ops
// and mse_loss on the CPU. Targets are validated in a serial pass first: an error must not be
// thrown from inside an OpenMP region. Losses are summed over rows in row order, so results do
// not depend on the thread count.
#include "kernels/cpu/loss_kernels.h"

#include <cmath>
#include <type_traits>
#include <vector>

#include "kernels/cpu/parallel_for.h"
#include "kernels/cpu/pointwise_loop.h"

namespace ember::cpu {

namespace {

constexpr int64_t kNone = 0;
constexpr int64_t kMean = 1;

// A class-index loss call: scores [N, C] (or [C]) with any strides, targets [N] (or 0-d).
struct ClassLoss {
  int64_t rows = 1;
  int64_t classes = 0;
  int64_t row_stride = 0;
  int64_t class_stride = 1;
  const int64_t* target = nullptr;
  int64_t target_stride = 0;
  int64_t reduction = kMean;
  int64_t ignore_index = -100;
  int64_t counted = 0;  // targets that are not ignored: the divisor of the mean
  double smoothing = 0.0;

  bool ignored(int64_t row) const { return target[row * target_stride] == ignore_index; }
  int64_t target_of(int64_t row) const { return target[row * target_stride]; }
};

ClassLoss class_loss(const OpCall& call, const Tensor& scores, const Tensor& target) {
  ClassLoss loss;
  const int rank = scores.dim();
  loss.rows = rank == 2 ? scores.sizes()[0] : 1;
  loss.classes = scores.sizes()[rank - 1];
  loss.row_stride = rank == 2 ? scores.strides()[0] : 0;
  loss.class_stride = scores.strides()[rank - 1];
  loss.target = target.data_ptr<int64_t>();
  loss.target_stride = target.dim() == 1 ? target.strides()[0] : 0;
  loss.reduction = call.attrs.get<int64_t>("reduction");
  loss.ignore_index = call.attrs.get<int64_t>("ignore_index");
  loss.smoothing = call.attrs.get_or<double>("label_smoothing", 0.0);
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

// Sums per-row losses in row order (rows run in parallel into a buffer when there are many).
template <typename RowLoss>
double total_loss(const ClassLoss& loss, RowLoss&& row_loss) {
  if (loss.rows * loss.classes < kParallelGrain || get_num_threads() == 1) {
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
  if (loss.reduction == kNone) {
    const bool parallel = loss.rows * loss.classes >= kParallelGrain && get_num_threads() > 1;
    parallel_for(loss.rows, parallel, [&](int64_t row) { out[row] = static_cast<T>(row_loss(row)); });
    return;
  }
  const double total = total_loss(loss, row_loss);
  out[0] = static_cast<T>(loss.reduction == kMean ? total / static_cast<double>(loss.counted) : total);
}

// The gradient's scale for a row: its own grad (none), or the scalar grad, divided by the number
// of counted targets for mean.
template <typename T>
struct GradScale {
  const T* grad;
  int64_t stride;
  const ClassLoss& loss;
  double operator()(int64_t row) const {
    const double value = static_cast<double>(static_cast<compute_t<T>>(grad[row * stride]));
    return loss.reduction == kMean ? value / static_cast<double>(loss.counted) : value;
  }
};
template <typename T>
GradScale<T> grad_scale(const Tensor& grad, const ClassLoss& loss) {
  const int64_t stride = loss.reduction == kNone && grad.dim() == 1 ? grad.strides()[0] : 0;
  return {grad.data_ptr<T>(), stride, loss};
}

// The row maximum and sum of exp(z - max): the log-sum-exp without overflow.
template <typename T>
void row_statistics(const T* row, int64_t classes, int64_t step, compute_t<T>& maximum, double& total) {
  using C = compute_t<T>;
  maximum = -std::numeric_limits<C>::infinity();
  for (int64_t c = 0; c < classes; ++c) maximum = std::max(maximum, static_cast<C>(row[c * step]));
  total = 0.0;
  for (int64_t c = 0; c < classes; ++c) total += std::exp(static_cast<C>(row[c * step]) - maximum);
}

template <typename T>
void cross_entropy_typed(const Tensor& output, const Tensor& logits, const ClassLoss& loss) {
  using C = compute_t<T>;
  const T* data = logits.data_ptr<T>();
  const double keep = 1.0 - loss.smoothing;
  const double spread = loss.smoothing / static_cast<double>(loss.classes);
  write_loss<T>(output, loss, [&](int64_t i) {
    if (loss.ignored(i)) return 0.0;
    const T* row = data + i * loss.row_stride;
    C maximum;
    double total;
    row_statistics(row, loss.classes, loss.class_stride, maximum, total);
    const double log_sum = static_cast<double>(maximum) + std::log(total);
    const double nll = log_sum - static_cast<double>(static_cast<C>(row[loss.target_of(i) * loss.class_stride]));
    if (loss.smoothing == 0.0) return nll;
    double row_sum = 0.0;  // sum_c -log p_c = C lse - sum_c z_c
    for (int64_t c = 0; c < loss.classes; ++c) row_sum += static_cast<C>(row[c * loss.class_stride]);
    return keep * nll + spread * (static_cast<double>(loss.classes) * log_sum - row_sum);
  });
}

template <typename T>
void cross_entropy_backward_typed(const Tensor& grad_logits, const Tensor& grad, const Tensor& logits,
                                  const ClassLoss& loss) {
  using C = compute_t<T>;
  const T* data = logits.data_ptr<T>();
  T* out = grad_logits.data_ptr<T>();
  const GradScale<T> scale_of = grad_scale<T>(grad, loss);
  const C keep = static_cast<C>(1.0 - loss.smoothing);
  const C spread = static_cast<C>(loss.smoothing / static_cast<double>(loss.classes));
  const bool parallel = loss.rows * loss.classes >= kParallelGrain && get_num_threads() > 1;
  parallel_for(loss.rows, parallel, [&](int64_t i) {
    T* out_row = out + i * loss.classes;
    if (loss.ignored(i)) {
      for (int64_t c = 0; c < loss.classes; ++c) out_row[c] = static_cast<T>(C(0));
      return;
    }
    const T* row = data + i * loss.row_stride;
    C maximum = -std::numeric_limits<C>::infinity();
    for (int64_t c = 0; c < loss.classes; ++c) maximum = std::max(maximum, static_cast<C>(row[c * loss.class_stride]));
    // exp(z - max) goes straight into the output row (one exp per element); 16-bit outputs
    // would round it, so they recompute it instead.
    double total = 0.0;
    for (int64_t c = 0; c < loss.classes; ++c) {
      const C value = std::exp(static_cast<C>(row[c * loss.class_stride]) - maximum);
      if constexpr (std::is_same_v<T, C>) out_row[c] = value;
      total += value;
    }
    const C inverse_total = static_cast<C>(1.0 / total);
    const C scale = static_cast<C>(scale_of(i));
    const int64_t target = loss.target_of(i);
    for (int64_t c = 0; c < loss.classes; ++c) {
      C exponential;
      if constexpr (std::is_same_v<T, C>) {
        exponential = out_row[c];
      } else {
        exponential = std::exp(static_cast<C>(row[c * loss.class_stride]) - maximum);
      }
      const C hot = c == target ? keep : C(0);
      out_row[c] = static_cast<T>(scale * (exponential * inverse_total - spread - hot));
    }
  });
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
  if (reduction == kNone) {
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
  output.data_ptr<T>()[0] = static_cast<T>(reduction == kMean ? total / static_cast<double>(count) : total);
}

}  // namespace

void cross_entropy_kernel(const OpCall& call, TensorList& outputs) {
  const ClassLoss loss = class_loss(call, call.input(0), call.input(1));
  dispatch_floating(call.input(0).dtype(), "cross_entropy", [&](auto zero) {
    cross_entropy_typed<decltype(zero)>(outputs[0], call.input(0), loss);
  });
}

void cross_entropy_backward_kernel(const OpCall& call, TensorList& outputs) {
  const ClassLoss loss = class_loss(call, call.input(1), call.input(2));
  dispatch_floating(call.input(1).dtype(), "cross_entropy_backward", [&](auto zero) {
    cross_entropy_backward_typed<decltype(zero)>(outputs[0], call.input(0), call.input(1), loss);
  });
}

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
