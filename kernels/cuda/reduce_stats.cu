// CUDA var, argmax and argmin as reducers for reduce_kernels.cuh. var merges (count, mean, M2)
// (Chan et al.'s pairwise update: one pass, no E[x^2] - E[x]^2 cancellation); argmax
// keeps (value, position) pairs and on ties the smaller position, so lanes may merge in any order.
#include "kernels/cuda/reduce_kernels.cuh"

namespace ember::cuda::detail {

namespace {

// No member initializers: accumulators live in __shared__ arrays, which cannot be constructed.
// A thread first sums deviations from its first element (`pivot`: no division per element, and
// no cancellation as the pivot lies among the data); seal turns those sums into (count, mean, M2).
template <typename Real> struct Moments {
  Real count;
  Real mean;   // before seal: sum of (x - pivot)
  Real m2;     // sum of squared deviations from mean; before seal: from pivot
  Real pivot;
};

// Divisor max(0, N - correction) like the CPU op (and PyTorch): too few elements give inf or NaN.
template <typename Real> struct VarianceReducer {
  using Acc = Moments<Real>;
  int64_t correction;
  __device__ __forceinline__ Acc identity() const { return Acc{Real(0), Real(0), Real(0), Real(0)}; }
  template <typename Value> __device__ __forceinline__ Acc accumulate(Acc acc, Value value, int64_t) const {
    const Real x = static_cast<Real>(value);
    if (acc.count == Real(0)) acc.pivot = x;
    const Real deviation = x - acc.pivot;
    return Acc{acc.count + Real(1), acc.mean + deviation, acc.m2 + deviation * deviation, acc.pivot};
  }
  __device__ __forceinline__ Acc seal(Acc acc) const {
    if (acc.count == Real(0)) return acc;
    const Real shift = acc.mean / acc.count;
    const Real m2 = acc.m2 - acc.mean * shift;
    // Rounding can leave m2 slightly negative: clamp that, but keep a NaN (an inf or NaN input)
    // for the result, as the CPU's variance gives NaN there.
    return Acc{acc.count, acc.pivot + shift, m2 < Real(0) ? Real(0) : m2, Real(0)};
  }
  // Chan et al.'s pairwise merge of sealed moments.
  __device__ __forceinline__ Acc combine(Acc a, Acc b) const {
    if (a.count == Real(0)) return b;
    if (b.count == Real(0)) return a;
    const Real count = a.count + b.count;
    const Real delta = b.mean - a.mean;
    const Real weight = b.count / count;
    return Acc{count, a.mean + delta * weight, a.m2 + b.m2 + delta * delta * a.count * weight, Real(0)};
  }
  __device__ __forceinline__ Real finish(Acc acc, int64_t count) const {
    // In double: count - correction overflows int64 for a correction near its limits.
    const double divisor = fmax(0.0, static_cast<double>(count) - static_cast<double>(correction));
    return acc.m2 / static_cast<Real>(divisor);
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
  // A thread meets its positions in increasing order, so the earlier one is always `acc`.
  template <typename In> __device__ __forceinline__ Acc accumulate(Acc acc, In value, int64_t position) const {
    const Value candidate = static_cast<Value>(value);
    return acc.position < 0 || Better{}(candidate, acc.value) ? Acc{candidate, position} : acc;
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
