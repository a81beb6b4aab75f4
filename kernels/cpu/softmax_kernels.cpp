// softmax / log_softmax and their backward ops on the CPU, one slice along `dim` at a time.
// Numerically stable: the slice maximum is subtracted before exp, so large logits never
// overflow; sums accumulate in double.
#include "kernels/cpu/softmax_kernels.h"

#include <cmath>
#include <type_traits>

#include "kernels/cpu/reduce_geometry.h"

namespace ember::cpu {

namespace {

int dim_of(const OpCall& call, const Tensor& tensor) {
  return wrap_dim(call.attrs.get<int64_t>("dim"), tensor.dim(), call.op.name);
}

template <typename T>
compute_t<T> at(const T* data, int64_t offset) {
  return static_cast<compute_t<T>>(data[offset]);
}

// y = exp(x - max) / sum exp(x - max), or its log; one read for the max, one for the sum, one to
// write.
template <typename T, bool Log>
void softmax_typed(const Tensor& output, const Tensor& input, int dim) {
  using C = compute_t<T>;
  const T* in = input.data_ptr<T>();
  T* out = output.data_ptr<T>();
  for_each_slice<2>(input.sizes(), {input.strides(), output.strides()}, dim,
                    [&](std::array<int64_t, 2> base, int64_t length, std::array<int64_t, 2> step) {
    C maximum = -std::numeric_limits<C>::infinity();
    for (int64_t i = 0; i < length; ++i) maximum = std::max(maximum, at(in, base[0] + i * step[0]));
    double total = 0.0;
    if constexpr (!Log && std::is_same_v<T, C>) {  // keep exp(x - max) in the output, then scale it
      for (int64_t i = 0; i < length; ++i) {
        const C value = std::exp(at(in, base[0] + i * step[0]) - maximum);
        out[base[1] + i * step[1]] = value;
        total += value;
      }
      const C scale = static_cast<C>(1.0 / total);
      for (int64_t i = 0; i < length; ++i) out[base[1] + i * step[1]] *= scale;
      return;
    }
    for (int64_t i = 0; i < length; ++i) total += std::exp(at(in, base[0] + i * step[0]) - maximum);
    if constexpr (Log) {
      // (x - max) - log(total), not x - (max + log(total)): the sum would round to max's ulp.
      const C log_total = static_cast<C>(std::log(total));
      for (int64_t i = 0; i < length; ++i)
        out[base[1] + i * step[1]] = static_cast<T>((at(in, base[0] + i * step[0]) - maximum) - log_total);
    } else {
      const C scale = static_cast<C>(1.0 / total);
      for (int64_t i = 0; i < length; ++i)
        out[base[1] + i * step[1]] = static_cast<T>(std::exp(at(in, base[0] + i * step[0]) - maximum) * scale);
    }
  });
}

template <typename T, bool Log>
void softmax_backward_typed(const Tensor& grad_input, const Tensor& grad, const Tensor& output, int dim) {
  using C = compute_t<T>;
  const T* g = grad.data_ptr<T>();
  const T* y = output.data_ptr<T>();
  T* out = grad_input.data_ptr<T>();
  for_each_slice<3>(output.sizes(), {grad.strides(), output.strides(), grad_input.strides()}, dim,
                    [&](std::array<int64_t, 3> base, int64_t length, std::array<int64_t, 3> step) {
    double total = 0.0;  // sum(grad * y) for softmax, sum(grad) for log_softmax
    for (int64_t i = 0; i < length; ++i) {
      const double grad_value = at(g, base[0] + i * step[0]);
      total += Log ? grad_value : grad_value * at(y, base[1] + i * step[1]);
    }
    const C dot = static_cast<C>(total);
    for (int64_t i = 0; i < length; ++i) {
      const C grad_value = at(g, base[0] + i * step[0]);
      const C y_value = at(y, base[1] + i * step[1]);
      const C result = Log ? grad_value - std::exp(y_value) * dot : y_value * (grad_value - dot);
      out[base[2] + i * step[2]] = static_cast<T>(result);
    }
  });
}

}  // namespace

void softmax_kernel(const OpCall& call, TensorList& outputs) {
  const Tensor& input = call.input(0);
  dispatch_floating(input.dtype(), "softmax", [&](auto zero) {
    softmax_typed<decltype(zero), false>(outputs[0], input, dim_of(call, input));
  });
}

void log_softmax_kernel(const OpCall& call, TensorList& outputs) {
  const Tensor& input = call.input(0);
  dispatch_floating(input.dtype(), "log_softmax", [&](auto zero) {
    softmax_typed<decltype(zero), true>(outputs[0], input, dim_of(call, input));
  });
}

void softmax_backward_kernel(const OpCall& call, TensorList& outputs) {
  const Tensor& output = call.input(1);
  dispatch_floating(output.dtype(), "softmax_backward", [&](auto zero) {
    softmax_backward_typed<decltype(zero), false>(outputs[0], call.input(0), output, dim_of(call, output));
  });
}

void log_softmax_backward_kernel(const OpCall& call, TensorList& outputs) {
  const Tensor& output = call.input(1);
  dispatch_floating(output.dtype(), "log_softmax_backward", [&](auto zero) {
    softmax_backward_typed<decltype(zero), true>(outputs[0], call.input(0), output, dim_of(call, output));
  });
}

}  // namespace ember::cpu
