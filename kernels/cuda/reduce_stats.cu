// CUDA var, argmax and argmin as reducers for reduce_kernels.cuh. var merges (count, mean, M2)
// triples (Chan et al.'s pairwise update: one pass, no E[x^2] - E[x]^2 cancellation); argmax
// keeps (value, position) pairs and on ties the smaller position, so lanes may merge in any order.
#include "kernels/cuda/reduce_kernels.cuh"

namespace ember::cuda::detail {

namespace {

// No member initializers: accumulators live in __shared__ arrays, which cannot be constructed.
template <typename Acc> struct Moments {
  Acc count;
  Acc mean;
  Acc m2;  // sum of squared deviations from mean
};

// Divisor max(0, N - correction) like the CPU op (and PyTorch): too few elements give inf or NaN.
template <typename Real> struct VarianceReducer {
  using State = Moments<Real>;
  using Acc = State;  // the interface's accumulator
  int64_t correction;
  __device__ __forceinline__ State identity() const { return State{Real(0), Real(0), Real(0)}; }
  __device__ __forceinline__ State combine(State a, State b) const {
    if (a.count == Real(0)) return b;
    if (b.count == Real(0)) return a;
    const Real count = a.count + b.count;
    const Real delta = b.mean - a.mean;
    const Real weight = b.count / count;
    return State{count, a.mean + delta * weight, a.m2 + b.m2 + delta * delta * a.count * weight};
  }
  template <typename Value> __device__ __forceinline__ State lift(Value value, int64_t) const {
    return State{Real(1), static_cast<Real>(value), Real(0)};
  }
  __device__ __forceinline__ Real finish(State state, int64_t count) const {
    const int64_t divisor = count - correction > 0 ? count - correction : 0;
    return state.m2 / static_cast<Real>(divisor);
  }
};

template <typename Value> struct Candidate {
  Value value;
  int64_t position;  // -1: no element seen yet
};

// Better is fn::ArgMaxBetter or fn::ArgMinBetter: strictly better, or the first NaN.
template <typename Value, typename Better> struct ArgReducer {
  using Acc = Candidate<Value>;
  __device__ __forceinline__ Acc identity() const { return Acc{Value{}, -1}; }
  __device__ __forceinline__ Acc combine(Acc a, Acc b) const {
    if (a.position < 0) return b;
    if (b.position < 0) return a;
    const Acc& earlier = a.position < b.position ? a : b;
    const Acc& later = a.position < b.position ? b : a;
    return Better{}(later.value, earlier.value) ? later : earlier;
  }
  template <typename In> __device__ __forceinline__ Acc lift(In value, int64_t position) const {
    return Acc{static_cast<Value>(value), position};
  }
  __device__ __forceinline__ int64_t finish(Acc a, int64_t) const { return a.position; }
};

}  // namespace

int launch_stats_family(ReduceKind kind, DType dtype, const void* input, void* output, void* scratch,
                        const ReduceLayout& layout, int64_t correction) {
  int status = 0;
  if (kind == ReduceKind::Var) {
    dispatch_floating(dtype, [&](auto zero) {
      using T = decltype(zero);
      status = run_reduce(static_cast<const T*>(input), static_cast<T*>(output), scratch, layout,
                          VarianceReducer<accumulate_t<T>>{correction});
    });
    return status;
  }
  dispatch_all(dtype, [&](auto zero) {
    using T = decltype(zero);
    using C = compute_t<T>;
    const T* typed_input = static_cast<const T*>(input);
    int64_t* indices = static_cast<int64_t*>(output);
    if (kind == ReduceKind::ArgMax) {
      status = run_reduce(typed_input, indices, scratch, layout, ArgReducer<C, fn::ArgMaxBetter<C>>{});
    } else {
      status = run_reduce(typed_input, indices, scratch, layout, ArgReducer<C, fn::ArgMinBetter<C>>{});
    }
  });
  return status;
}

}  // namespace ember::cuda::detail
