// The running reductions on the CPU (cumsum, cumprod, cummax, cummin, logcumsumexp), one slice
// along the scanned dim per call of for_each_slice's body.
#include "kernels/cpu/scan_kernels.h"

#include "kernels/cpu/reduce_geometry.h"
#include "kernels/reduce_functors.h"
#include "kernels/scan_functors.h"

namespace ember::cpu {

namespace {

// out[i] = combine(out[i - 1], in[i]) from combine's identity, in Acc, for a reduction functor
// of kernels/reduce_functors.h or kernels/scan_functors.h.
template <typename Out, typename Acc, typename T, typename Combine>
void scan_typed(const Tensor& output, const Tensor& input, int dim, bool reverse, Combine step) {
  Out* out = output.data_ptr<Out>();
  const T* data = input.data_ptr<T>();
  for_each_slice<2>(input.sizes(), {input.strides(), output.strides()}, dim,
                    [&](std::array<int64_t, 2> at, int64_t length, std::array<int64_t, 2> stride) {
                      Acc total = step.identity();
                      for (int64_t j = 0; j < length; ++j) {
                        const int64_t i = reverse ? length - 1 - j : j;
                        const Acc value = static_cast<Acc>(static_cast<compute_t<T>>(data[at[0] + i * stride[0]]));
                        total = step.combine(total, value);
                        out[at[1] + i * stride[1]] = static_cast<Out>(total);
                      }
                    });
}

// cumsum and cumprod: floating inputs keep their dtype and accumulate in double, integers and
// bool become int64.
template <template <typename> class Reduce>
void arithmetic_scan(const OpCall& call, TensorList& outputs, bool reverse) {
  const Tensor& input = call.input(0);
  const int dim = wrap_dim(call.attrs.get<int64_t>("dim"), input.dim(), call.op.name);
  dispatch_dtype(input.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_floating_point_v<compute_t<T>>) {
      scan_typed<T, double, T>(outputs[0], input, dim, reverse, Reduce<double>{});
    } else {
      scan_typed<int64_t, int64_t, T>(outputs[0], input, dim, reverse, Reduce<int64_t>{});
    }
  });
}

template <bool Max>
void running_extremum(const OpCall& call, TensorList& outputs) {
  const Tensor& input = call.input(0);
  const int dim = wrap_dim(call.attrs.get<int64_t>("dim"), input.dim(), call.op.name);
  dispatch_dtype(input.dtype(), [&](auto zero) {
    using T = decltype(zero);
    using Value = compute_t<T>;
    const fn::RunningExtremumReplaces<Value, Max> replaces;
    const T* data = input.data_ptr<T>();
    T* values = outputs[0].data_ptr<T>();
    int64_t* indices = outputs[1].data_ptr<int64_t>();
    for_each_slice<3>(input.sizes(), {input.strides(), outputs[0].strides(), outputs[1].strides()}, dim,
                      [&](std::array<int64_t, 3> at, int64_t length, std::array<int64_t, 3> stride) {
                        if (length == 0) return;
                        T best = data[at[0]];
                        int64_t best_index = 0;
                        for (int64_t i = 0; i < length; ++i) {
                          const T candidate = data[at[0] + i * stride[0]];
                          if (replaces(static_cast<Value>(candidate), static_cast<Value>(best))) {
                            best = candidate;
                            best_index = i;
                          }
                          values[at[1] + i * stride[1]] = best;
                          indices[at[2] + i * stride[2]] = best_index;
                        }
                      });
  });
}

}  // namespace

void cumsum_kernel(const OpCall& call, TensorList& outputs) {
  arithmetic_scan<fn::SumReduce>(call, outputs, call.attrs.get<bool>("reverse"));
}

void cumprod_kernel(const OpCall& call, TensorList& outputs) { arithmetic_scan<fn::ProdReduce>(call, outputs, false); }

void cummax_kernel(const OpCall& call, TensorList& outputs) { running_extremum<true>(call, outputs); }
void cummin_kernel(const OpCall& call, TensorList& outputs) { running_extremum<false>(call, outputs); }

void logcumsumexp_kernel(const OpCall& call, TensorList& outputs) {
  const Tensor& input = call.input(0);
  const int dim = wrap_dim(call.attrs.get<int64_t>("dim"), input.dim(), call.op.name);
  const bool reverse = call.attrs.get<bool>("reverse");
  dispatch_floating(input.dtype(), call.op.name, [&](auto zero) {
    using T = decltype(zero);
    scan_typed<T, double, T>(outputs[0], input, dim, reverse, fn::LogAddExp<double>{});
  });
}

}  // namespace ember::cpu
