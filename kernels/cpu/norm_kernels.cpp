// CPU layer normalisation, forward and fused backward (formulas in norm_kernels.h).
#include "kernels/cpu/norm_kernels.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/parallel_for.h"
#include "runtime/dispatch.h"
#include "runtime/parallel.h"

namespace ember::cpu {

namespace {

// Kernels read inputs as flat rows; a strided input is copied once (outside autograd).
Tensor dense(const Tensor& tensor) {
  if (!tensor.defined() || tensor.is_contiguous()) return tensor;
  NoGradGuard no_grad;
  return tensor.contiguous();
}

template <typename T>
const T* pointer_or_null(const Tensor& tensor) {
  return tensor.defined() ? tensor.data_ptr<T>() : nullptr;
}

// Statistics are float32 for the 16-bit floats, the input's own type otherwise.
template <typename T>
using stat_t = compute_t<T>;

template <typename T>
void layer_norm_rows(const T* x, const T* weight, const T* bias, T* y, stat_t<T>* mean_out,
                     stat_t<T>* rstd_out, int64_t rows, int64_t n, double eps) {
  using C = compute_t<T>;
  parallel_for(rows, rows * n >= kParallelGrain && rows > 1, [&](int64_t r) {
    const T* row = x + r * n;
    // Two passes in double: the centred second pass avoids E[x^2] - E[x]^2 cancellation.
    double sum = 0.0;
    for (int64_t j = 0; j < n; ++j) sum += static_cast<double>(static_cast<C>(row[j]));
    const double mean = n > 0 ? sum / static_cast<double>(n) : 0.0;
    double squares = 0.0;
    for (int64_t j = 0; j < n; ++j) {
      const double centred = static_cast<double>(static_cast<C>(row[j])) - mean;
      squares += centred * centred;
    }
    const double variance = n > 0 ? squares / static_cast<double>(n) : 0.0;  // empty rows: var 0
    const double rstd = 1.0 / std::sqrt(variance + eps);
    mean_out[r] = static_cast<stat_t<T>>(mean);
    rstd_out[r] = static_cast<stat_t<T>>(rstd);
    const C mean_c = static_cast<C>(mean);
    const C rstd_c = static_cast<C>(rstd);
    T* out = y + r * n;
    for (int64_t j = 0; j < n; ++j) {
      const C scale = weight ? static_cast<C>(weight[j]) : C(1);
      const C shift = bias ? static_cast<C>(bias[j]) : C(0);
      out[j] = static_cast<T>((static_cast<C>(row[j]) - mean_c) * rstd_c * scale + shift);
    }
  });
}

// Backward over fixed blocks of rows. Each block writes its rows' grad_x and its own partial
// grad_w / grad_b (in double); the partials are then summed in block order. Blocks depend only on
// the shape, so the result is identical for every thread count.
template <typename T>
void layer_norm_backward_rows(const T* grad_y, const T* x, const stat_t<T>* mean, const stat_t<T>* rstd,
                              const T* weight, T* grad_x, T* grad_w, T* grad_b, int64_t rows, int64_t n) {
  using C = compute_t<T>;
  const int64_t block_rows = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(n, 1));
  const int64_t blocks = (rows + block_rows - 1) / block_rows;
  Tensor partial = make_tensor({std::max<int64_t>(blocks, 1), 2, n}, kFloat64, kCPU);
  double* partials = partial.data_ptr<double>();
  const double inverse_n = n > 0 ? 1.0 / static_cast<double>(n) : 0.0;

  parallel_for(blocks, blocks > 1, [&](int64_t block) {
    double* partial_w = partials + block * 2 * n;
    double* partial_b = partial_w + n;
    std::fill(partial_w, partial_w + 2 * n, 0.0);
    const int64_t last = std::min(rows, (block + 1) * block_rows);
    for (int64_t r = block * block_rows; r < last; ++r) {
      const T* dy = grad_y + r * n;
      const T* row = x + r * n;
      const C mean_c = static_cast<C>(mean[r]);
      const C rstd_c = static_cast<C>(rstd[r]);
      double sum_g = 0.0;       // sum of g = dy * w
      double sum_g_xhat = 0.0;  // sum of g * xhat
      for (int64_t j = 0; j < n; ++j) {
        const C xhat = (static_cast<C>(row[j]) - mean_c) * rstd_c;
        const C g = static_cast<C>(dy[j]) * (weight ? static_cast<C>(weight[j]) : C(1));
        sum_g += static_cast<double>(g);
        sum_g_xhat += static_cast<double>(g * xhat);
      }
      const C mean_g = static_cast<C>(sum_g * inverse_n);
      const C mean_g_xhat = static_cast<C>(sum_g_xhat * inverse_n);
      T* dx = grad_x + r * n;
      for (int64_t j = 0; j < n; ++j) {
        const C dy_j = static_cast<C>(dy[j]);
        const C xhat = (static_cast<C>(row[j]) - mean_c) * rstd_c;
        const C g = dy_j * (weight ? static_cast<C>(weight[j]) : C(1));
        dx[j] = static_cast<T>(rstd_c * (g - mean_g - xhat * mean_g_xhat));
        partial_w[j] += static_cast<double>(dy_j * xhat);
        partial_b[j] += static_cast<double>(dy_j);
      }
    }
  });

  parallel_for(n, blocks * n >= kParallelGrain, [&](int64_t j) {
    double total_w = 0.0;
    double total_b = 0.0;
    for (int64_t block = 0; block < blocks; ++block) {
      total_w += partials[block * 2 * n + j];
      total_b += partials[block * 2 * n + n + j];
    }
    grad_w[j] = static_cast<T>(static_cast<C>(total_w));
    grad_b[j] = static_cast<T>(static_cast<C>(total_b));
  });
}

}  // namespace

void layer_norm_kernel(const OpCall& call, TensorList& outputs) {
  const Tensor input = dense(call.input(0));
  const Tensor weight = dense(call.input(1));
  const Tensor bias = dense(call.input(2));
  const int64_t rows = outputs[1].numel();
  const int64_t n = rows > 0 ? input.numel() / rows : 0;
  const double eps = call.attrs.get<double>("eps");
  dispatch_floating(input.dtype(), "layer_norm", [&](auto zero) {
    using T = decltype(zero);
    layer_norm_rows<T>(input.data_ptr<T>(), pointer_or_null<T>(weight), pointer_or_null<T>(bias),
                       outputs[0].data_ptr<T>(), outputs[1].data_ptr<stat_t<T>>(),
                       outputs[2].data_ptr<stat_t<T>>(), rows, n, eps);
  });
}

void layer_norm_backward_kernel(const OpCall& call, TensorList& outputs) {
  const Tensor grad_y = dense(call.input(0));
  const Tensor input = dense(call.input(1));
  const Tensor mean = dense(call.input(2));
  const Tensor rstd = dense(call.input(3));
  const Tensor weight = dense(call.input(4));
  const int64_t rows = mean.numel();
  const int64_t n = outputs[1].numel();
  dispatch_floating(input.dtype(), "layer_norm_backward", [&](auto zero) {
    using T = decltype(zero);
    layer_norm_backward_rows<T>(grad_y.data_ptr<T>(), input.data_ptr<T>(), mean.data_ptr<stat_t<T>>(),
                                rstd.data_ptr<stat_t<T>>(), pointer_or_null<T>(weight),
                                outputs[0].data_ptr<T>(), outputs[1].data_ptr<T>(),
                                outputs[2].data_ptr<T>(), rows, n);
  });
}

}  // namespace ember::cpu
