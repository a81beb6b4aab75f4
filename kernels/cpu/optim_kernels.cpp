// CPU fused optimizer steps: one pass over memory per parameter. Every tensor of a call has the
// same shape and dtype (runtime/ops/optim_ops.cpp checks); a contiguous run is a flat loop, other
// layouts walk their strides through the pointwise iterator's geometry. Elements are independent,
// so the result does not depend on the thread count (the file is compiled without FMA contraction,
// so every compiled copy of a loop, vectorized or scalar, serial or OpenMP's, rounds alike:
// runtime/CMakeLists.txt).
#include "kernels/cpu/optim_kernels.h"

#include <cmath>

#include "kernels/cpu/parallel_for.h"
#include "kernels/cpu/pointwise_loop.h"
#include "kernels/optim_functors.h"

namespace ember::cpu {

namespace {

// Runs the update over N same-shape tensors in one pass. Contiguous tensors go to
// flat(base_pointers, begin, end) in parallel chunks, so the range loop can be vectorized; other
// layouts call element(pointers) per element, walking strides like the pointwise iterator.
template <typename T, int N, typename Flat, typename Element>
void for_each_element(const std::array<const Tensor*, N>& tensors, Flat&& flat, Element&& element) {
  const int64_t numel = tensors[0]->numel();
  if (numel == 0) return;
  std::array<const Tensor*, N - 1> others;
  for (int k = 1; k < N; ++k) others[k - 1] = tensors[k];
  const LoopGeometry<N> geometry = make_geometry<N>(*tensors[0], others);
  const bool parallel = numel >= kParallelGrain && get_num_threads() > 1;

  if (geometry.all_contiguous) {
    std::array<T*, N> base;
    for (int k = 0; k < N; ++k) base[k] = reinterpret_cast<T*>(geometry.base[k]);
    parallel_ranges(numel, [&](int64_t begin, int64_t end) { flat(base, begin, end); });
    return;
  }

  std::array<size_t, N> element_sizes;
  element_sizes.fill(sizeof(T));
  auto run_body = [&](std::array<char*, N>& pointers, int64_t count, const std::array<int64_t, N>& step) {
    for (int64_t i = 0; i < count; ++i) {
      std::array<T*, N> at;
      for (int k = 0; k < N; ++k) at[k] = reinterpret_cast<T*>(pointers[k] + i * step[k]);
      element(at);
    }
  };
  const int rank = geometry.sizes.size();
  const int64_t runs = rank <= 1 ? 1 : numel / geometry.sizes[rank - 1];
  parallel_for(runs, parallel && runs > 1, [&](int64_t run) {
    for_each_run<N>(geometry, element_sizes, run, run + 1, run_body);
  });
}

// One element of SGD: load, update in the compute type C, store.
template <typename T, typename C, bool Momentum>
inline void sgd_element(const fn::SgdStep<C>& step, T* param, const T* grad, T* buffer) {
  C value = static_cast<C>(*param);
  C state = Momentum ? static_cast<C>(*buffer) : C(0);
  step(value, static_cast<C>(*grad), state);
  *param = static_cast<T>(value);
  if constexpr (Momentum) *buffer = static_cast<T>(state);
}

// A contiguous range; restrict tells the vectorizer that the arrays do not overlap (they are
// distinct tensors: the parameter, its gradient and its own state).
template <typename T, typename C, bool Momentum>
void sgd_range(const fn::SgdStep<C> step, T* __restrict param, const T* __restrict grad, T* __restrict buffer,
               int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i)
    sgd_element<T, C, Momentum>(step, param + i, grad + i, Momentum ? buffer + i : nullptr);
}

template <typename T, typename C, bool Amsgrad>
inline void adam_element(const fn::AdamStep<C>& step, T* param, const T* grad, T* exp_avg, T* exp_avg_sq,
                         T* max_exp_avg_sq) {
  C value = static_cast<C>(*param);
  C first = static_cast<C>(*exp_avg);
  C second = static_cast<C>(*exp_avg_sq);
  C maximum = Amsgrad ? static_cast<C>(*max_exp_avg_sq) : C(0);
  step(value, static_cast<C>(*grad), first, second, maximum);
  *param = static_cast<T>(value);
  *exp_avg = static_cast<T>(first);
  *exp_avg_sq = static_cast<T>(second);
  if constexpr (Amsgrad) *max_exp_avg_sq = static_cast<T>(maximum);
}

template <typename T, typename C, bool Amsgrad>
void adam_range(const fn::AdamStep<C> step, T* __restrict param, const T* __restrict grad, T* __restrict exp_avg,
                T* __restrict exp_avg_sq, T* __restrict max_exp_avg_sq, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i)
    adam_element<T, C, Amsgrad>(step, param + i, grad + i, exp_avg + i, exp_avg_sq + i,
                                Amsgrad ? max_exp_avg_sq + i : nullptr);
}

}  // namespace

void sgd_step_kernel(const OpCall& call, TensorList& outputs) {
  const Attrs& attrs = call.attrs;
  const Tensor& param = call.input(0);
  const Tensor& grad = call.input(1);
  const Tensor& buffer = call.input(2);
  const double momentum = attrs.get<double>("momentum");
  dispatch_floating(param.dtype(), "sgd_step_", [&](auto zero) {
    using T = decltype(zero);
    using C = compute_t<T>;
    const fn::SgdStep<C> step = fn::make_sgd_step<C>(attrs.get<double>("lr"), momentum, attrs.get<double>("dampening"),
                                                     attrs.get<double>("weight_decay"), attrs.get<bool>("nesterov"),
                                                     attrs.get<bool>("first_step"), attrs.get<bool>("maximize"));
    if (step.use_momentum) {
      for_each_element<T, 3>(
          {&param, &grad, &buffer},
          [&](const std::array<T*, 3>& base, int64_t begin, int64_t end) {
            sgd_range<T, C, true>(step, base[0], base[1], base[2], begin, end);
          },
          [&](const std::array<T*, 3>& at) { sgd_element<T, C, true>(step, at[0], at[1], at[2]); });
    } else {
      for_each_element<T, 2>(
          {&param, &grad},
          [&](const std::array<T*, 2>& base, int64_t begin, int64_t end) {
            sgd_range<T, C, false>(step, base[0], base[1], nullptr, begin, end);
          },
          [&](const std::array<T*, 2>& at) { sgd_element<T, C, false>(step, at[0], at[1], nullptr); });
    }
  });
}

void adam_step_kernel(const OpCall& call, TensorList& outputs) {
  const Attrs& attrs = call.attrs;
  const Tensor& param = call.input(0);
  dispatch_floating(param.dtype(), "adam_step_", [&](auto zero) {
    using T = decltype(zero);
    using C = compute_t<T>;
    const fn::AdamStep<C> step =
        fn::make_adam_step<C>(attrs.get<double>("lr"), attrs.get<double>("beta1"), attrs.get<double>("beta2"),
                              attrs.get<double>("eps"), attrs.get<double>("weight_decay"), attrs.get<int64_t>("step"),
                              attrs.get<bool>("amsgrad"), attrs.get<bool>("decoupled"), attrs.get<bool>("maximize"));
    if (step.amsgrad) {
      for_each_element<T, 5>(
          {&call.input(0), &call.input(1), &call.input(2), &call.input(3), &call.input(4)},
          [&](const std::array<T*, 5>& base, int64_t begin, int64_t end) {
            adam_range<T, C, true>(step, base[0], base[1], base[2], base[3], base[4], begin, end);
          },
          [&](const std::array<T*, 5>& at) { adam_element<T, C, true>(step, at[0], at[1], at[2], at[3], at[4]); });
    } else {
      for_each_element<T, 4>(
          {&call.input(0), &call.input(1), &call.input(2), &call.input(3)},
          [&](const std::array<T*, 4>& base, int64_t begin, int64_t end) {
            adam_range<T, C, false>(step, base[0], base[1], base[2], base[3], nullptr, begin, end);
          },
          [&](const std::array<T*, 4>& at) { adam_element<T, C, false>(step, at[0], at[1], at[2], at[3], nullptr); });
    }
  });
}

}  // namespace ember::cpu
