// var, argmax, argmin and the amax/amin gradient on the CPU. Each walks the reduction geometry
// one output element at a time (in parallel over outputs for big inputs), visiting that output's
// elements in logical order, so argmax's "first index on ties" is the row-major first.
#include <algorithm>

#include "kernels/cpu/parallel_for.h"
#include "kernels/cpu/reduce_geometry.h"
#include "kernels/cpu/reduce_kernels.h"
#include "kernels/reduce_functors.h"
#include "runtime/parallel.h"

namespace ember::cpu {

namespace {

bool run_parallel(int64_t outputs, int64_t reduce_count) {
  return outputs > 1 && outputs * reduce_count >= kParallelGrain && get_num_threads() > 1;
}

// Two passes in double per output: the mean, then the squared deviations from it (no
// cancellation, unlike E[x^2] - E[x]^2). Divisor max(0, N - correction) like PyTorch, so too few
// elements give inf or NaN rather than an error.
template <typename T>
void var_typed(const Tensor& output, const Tensor& input, uint32_t mask, int64_t correction) {
  T* out = output.data_ptr<T>();
  const T* data = input.data_ptr<T>();
  const ReduceGeometry<1> geometry = make_reduce_geometry<1>(input.sizes(), {input.strides()}, mask);
  const int64_t count = geometry.reduce_count;
  // In double: count - correction overflows int64 for a correction near its limits.
  const double divisor = std::max(0.0, static_cast<double>(count) - static_cast<double>(correction));
  const bool parallel = run_parallel(geometry.num_outputs, count);
  parallel_for(geometry.num_outputs, parallel, [&](int64_t o) {
    const std::array<int64_t, 1> base = geometry.outer_offsets(o);
    double total = 0.0;
    for_each_inner_run<1>(geometry, base, [&](std::array<int64_t, 1> at, int64_t run, std::array<int64_t, 1> step) {
      for (int64_t i = 0; i < run; ++i) total += static_cast<double>(data[at[0] + i * step[0]]);
    });
    const double mean = total / static_cast<double>(count);
    double squares = 0.0;
    for_each_inner_run<1>(geometry, base, [&](std::array<int64_t, 1> at, int64_t run, std::array<int64_t, 1> step) {
      for (int64_t i = 0; i < run; ++i) {
        const double deviation = static_cast<double>(data[at[0] + i * step[0]]) - mean;
        squares += deviation * deviation;
      }
    });
    out[o] = static_cast<T>(squares / divisor);
  });
}

// The reduced dims of argmax/argmin: one dim, or all of them (the flattened tensor).
uint32_t arg_mask(const OpCall& call) {
  const int rank = call.input(0).dim();
  if (!call.attrs.has("dim")) return rank == 0 ? 0u : (1u << rank) - 1u;
  const int dim = wrap_dim(call.attrs.get<int64_t>("dim"), rank, call.op.name);
  return rank == 0 ? 0u : 1u << dim;
}

template <typename T, typename Better>
void arg_typed(const Tensor& output, const Tensor& input, uint32_t mask) {
  int64_t* out = output.data_ptr<int64_t>();
  const T* data = input.data_ptr<T>();
  const ReduceGeometry<1> geometry = make_reduce_geometry<1>(input.sizes(), {input.strides()}, mask);
  const Better better;
  const bool parallel = run_parallel(geometry.num_outputs, geometry.reduce_count);
  parallel_for(geometry.num_outputs, parallel, [&](int64_t o) {
    compute_t<T> best{};
    int64_t best_index = 0;
    int64_t index = 0;
    for_each_inner_run<1>(geometry, geometry.outer_offsets(o),
                          [&](std::array<int64_t, 1> at, int64_t run, std::array<int64_t, 1> step) {
      for (int64_t i = 0; i < run; ++i, ++index) {
        const compute_t<T> value = static_cast<compute_t<T>>(data[at[0] + i * step[0]]);
        if (index == 0 || better(value, best)) {
          best = value;
          best_index = index;
        }
      }
    });
    out[o] = best_index;
  });
}

// Strides that walk a reduction result (shape reduced_sizes(sizes, mask, keepdim)) as if it were
// broadcast back to `sizes`: stride 0 along reduced dims.
Dims broadcast_back_strides(const Tensor& reduced, const Dims& sizes, uint32_t mask, bool keepdim) {
  Dims strides = Dims::filled(sizes.size(), 0);
  int source = 0;
  for (int d = 0; d < sizes.size(); ++d) {
    const bool is_reduced = mask & (1u << d);
    if (!is_reduced) strides[d] = reduced.stride(source);
    if (!is_reduced || keepdim) ++source;
  }
  return strides;
}

// Ties share the gradient equally. A NaN result routes the gradient to the NaN elements.
template <typename T>
void extremum_backward_typed(const Tensor& grad_input, const Tensor& grad, const Tensor& input,
                             const Tensor& result, uint32_t mask, bool keepdim) {
  using C = compute_t<T>;
  const Dims& sizes = input.sizes();
  const std::array<Dims, 4> strides{input.strides(), grad_input.strides(),
                                    broadcast_back_strides(grad, sizes, mask, keepdim),
                                    broadcast_back_strides(result, sizes, mask, keepdim)};
  const ReduceGeometry<4> geometry = make_reduce_geometry<4>(sizes, strides, mask);
  const T* in = input.data_ptr<T>();
  T* out = grad_input.data_ptr<T>();
  const T* grad_data = grad.data_ptr<T>();
  const T* result_data = result.data_ptr<T>();
  const bool parallel = run_parallel(geometry.num_outputs, geometry.reduce_count);
  parallel_for(geometry.num_outputs, parallel, [&](int64_t o) {
    const std::array<int64_t, 4> base = geometry.outer_offsets(o);
    const C target = static_cast<C>(result_data[base[3]]);
    const bool target_nan = fn::is_nan(target);
    auto is_tie = [&](C value) { return value == target || (target_nan && fn::is_nan(value)); };
    int64_t ties = 0;
    for_each_inner_run<4>(geometry, base, [&](std::array<int64_t, 4> at, int64_t run, std::array<int64_t, 4> step) {
      for (int64_t i = 0; i < run; ++i) ties += is_tie(static_cast<C>(in[at[0] + i * step[0]]));
    });
    const C share = static_cast<C>(grad_data[base[2]]) / static_cast<C>(std::max<int64_t>(ties, 1));
    for_each_inner_run<4>(geometry, base, [&](std::array<int64_t, 4> at, int64_t run, std::array<int64_t, 4> step) {
      for (int64_t i = 0; i < run; ++i)
        out[at[1] + i * step[1]] = static_cast<T>(is_tie(static_cast<C>(in[at[0] + i * step[0]])) ? share : C(0));
    });
  });
}

}  // namespace

void var_kernel(const OpCall& call, TensorList& outputs) {
  const Tensor& input = call.input(0);
  const uint32_t mask = reduce_mask(call.attrs.get<Dims>("dims"), input.dim(), "var");
  const int64_t correction = call.attrs.get<int64_t>("correction");
  dispatch_floating(input.dtype(), "var", [&](auto zero) {
    var_typed<decltype(zero)>(outputs[0], input, mask, correction);
  });
}

void argmax_kernel(const OpCall& call, TensorList& outputs) {
  dispatch_dtype(call.input(0).dtype(), [&](auto zero) {
    using T = decltype(zero);
    arg_typed<T, fn::ArgMaxBetter<compute_t<T>>>(outputs[0], call.input(0), arg_mask(call));
  });
}

void argmin_kernel(const OpCall& call, TensorList& outputs) {
  dispatch_dtype(call.input(0).dtype(), [&](auto zero) {
    using T = decltype(zero);
    arg_typed<T, fn::ArgMinBetter<compute_t<T>>>(outputs[0], call.input(0), arg_mask(call));
  });
}

void extremum_backward_kernel(const OpCall& call, TensorList& outputs) {
  const Tensor& grad = call.input(0);
  const Tensor& input = call.input(1);
  const uint32_t mask = reduce_mask(call.attrs.get<Dims>("dims"), input.dim(), "extremum_backward");
  const bool keepdim = call.attrs.get<bool>("keepdim");
  dispatch_floating(input.dtype(), "extremum_backward", [&](auto zero) {
    extremum_backward_typed<decltype(zero)>(outputs[0], grad, input, call.input(2), mask, keepdim);
  });
}

}  // namespace ember::cpu
