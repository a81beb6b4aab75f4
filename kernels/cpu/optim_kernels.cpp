// CPU fused optimizer steps: one pass over memory per parameter. Every tensor of a call has the
// same shape and dtype (runtime/ops/optim_ops.cpp checks); a contiguous run is a flat loop, other
// layouts walk their strides through the pointwise iterator's geometry. Elements are independent,
// so the result does not depend on the thread count.
#include "kernels/cpu/optim_kernels.h"

#include <cmath>

#include "kernels/cpu/pointwise_loop.h"
#include "kernels/optim_functors.h"

namespace ember::cpu {

namespace {

// Calls body(pointers) once per element, where pointers[k] points at that element of tensors[k].
template <typename T, int N, typename Body>
void for_each_element(const std::array<const Tensor*, N>& tensors, Body&& body) {
  const int64_t numel = tensors[0]->numel();
  if (numel == 0) return;
  std::array<const Tensor*, N - 1> others;
  for (int k = 1; k < N; ++k) others[k - 1] = tensors[k];
  const LoopGeometry<N> geometry = make_geometry<N>(*tensors[0], others);
  const bool parallel = numel >= kParallelGrain && get_num_threads() > 1;

  if (geometry.all_contiguous) {
    std::array<T*, N> base;
    for (int k = 0; k < N; ++k) base[k] = reinterpret_cast<T*>(geometry.base[k]);
    auto flat = [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        std::array<T*, N> at;
        for (int k = 0; k < N; ++k) at[k] = base[k] + i;
        body(at);
      }
    };
    const int64_t chunks = (numel + kParallelGrain - 1) / kParallelGrain;
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t chunk = 0; chunk < chunks; ++chunk)
      flat(chunk * kParallelGrain, std::min(numel, (chunk + 1) * kParallelGrain));
    return;
  }

  std::array<size_t, N> element_sizes;
  element_sizes.fill(sizeof(T));
  auto run_body = [&](std::array<char*, N>& pointers, int64_t count, const std::array<int64_t, N>& step) {
    for (int64_t i = 0; i < count; ++i) {
      std::array<T*, N> at;
      for (int k = 0; k < N; ++k) at[k] = reinterpret_cast<T*>(pointers[k] + i * step[k]);
      body(at);
    }
  };
  const int rank = geometry.sizes.size();
  const int64_t runs = rank <= 1 ? 1 : numel / geometry.sizes[rank - 1];
#pragma omp parallel for schedule(static) if (parallel && runs > 1)
  for (int64_t run = 0; run < runs; ++run) for_each_run<N>(geometry, element_sizes, run, run + 1, run_body);
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
    const fn::SgdStep<C> step{
        .neg_lr = static_cast<C>(-attrs.get<double>("lr")),
        .momentum = static_cast<C>(momentum),
        .one_minus_dampening = static_cast<C>(1.0 - attrs.get<double>("dampening")),
        .weight_decay = static_cast<C>(attrs.get<double>("weight_decay")),
        .use_momentum = momentum != 0.0,
        .nesterov = attrs.get<bool>("nesterov"),
        .first_step = attrs.get<bool>("first_step"),
    };
    if (step.use_momentum) {
      for_each_element<T, 3>({&param, &grad, &buffer}, [&](const std::array<T*, 3>& at) {
        C value = static_cast<C>(*at[0]);
        C state = static_cast<C>(*at[2]);
        step(value, static_cast<C>(*at[1]), state);
        *at[0] = static_cast<T>(value);
        *at[2] = static_cast<T>(state);
      });
    } else {
      for_each_element<T, 2>({&param, &grad}, [&](const std::array<T*, 2>& at) {
        C value = static_cast<C>(*at[0]);
        C unused = C(0);
        step(value, static_cast<C>(*at[1]), unused);
        *at[0] = static_cast<T>(value);
      });
    }
  });
}

void adam_step_kernel(const OpCall& call, TensorList& outputs) {
  const Attrs& attrs = call.attrs;
  const double lr = attrs.get<double>("lr");
  const double beta1 = attrs.get<double>("beta1");
  const double beta2 = attrs.get<double>("beta2");
  const double weight_decay = attrs.get<double>("weight_decay");
  // Host scalars in double, as PyTorch computes them in Python floats.
  const double step_count = static_cast<double>(attrs.get<int64_t>("step"));
  const double bias_correction1 = 1.0 - std::pow(beta1, step_count);
  const double bias_correction2 = 1.0 - std::pow(beta2, step_count);
  const Tensor& param = call.input(0);
  dispatch_floating(param.dtype(), "adam_step_", [&](auto zero) {
    using T = decltype(zero);
    using C = compute_t<T>;
    const fn::AdamStep<C> step{
        .beta1 = static_cast<C>(beta1),
        .beta2 = static_cast<C>(beta2),
        .one_minus_beta1 = static_cast<C>(1.0 - beta1),
        .one_minus_beta2 = static_cast<C>(1.0 - beta2),
        .eps = static_cast<C>(attrs.get<double>("eps")),
        .weight_decay = static_cast<C>(weight_decay),
        .decay_factor = static_cast<C>(1.0 - lr * weight_decay),
        .neg_step_size = static_cast<C>(-(lr / bias_correction1)),
        .bias_correction2_sqrt = static_cast<C>(std::sqrt(bias_correction2)),
        .amsgrad = attrs.get<bool>("amsgrad"),
        .decoupled = attrs.get<bool>("decoupled"),
    };
    auto update = [&](T* param_at, const T* grad_at, T* exp_avg_at, T* exp_avg_sq_at, T* max_at) {
      C value = static_cast<C>(*param_at);
      C first = static_cast<C>(*exp_avg_at);
      C second = static_cast<C>(*exp_avg_sq_at);
      C maximum = max_at != nullptr ? static_cast<C>(*max_at) : C(0);
      step(value, static_cast<C>(*grad_at), first, second, maximum);
      *param_at = static_cast<T>(value);
      *exp_avg_at = static_cast<T>(first);
      *exp_avg_sq_at = static_cast<T>(second);
      if (max_at != nullptr) *max_at = static_cast<T>(maximum);
    };
    if (step.amsgrad) {
      for_each_element<T, 5>({&call.input(0), &call.input(1), &call.input(2), &call.input(3), &call.input(4)},
                             [&](const std::array<T*, 5>& at) { update(at[0], at[1], at[2], at[3], at[4]); });
    } else {
      for_each_element<T, 4>({&call.input(0), &call.input(1), &call.input(2), &call.input(3)},
                             [&](const std::array<T*, 4>& at) { update(at[0], at[1], at[2], at[3], nullptr); });
    }
  });
}

}  // namespace ember::cpu
