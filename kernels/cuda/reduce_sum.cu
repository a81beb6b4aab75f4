// CUDA sum, mean, prod, any and all (reduce_kernels.cuh with the reduce_functors.h reducers), and the entry
// points of reduce.h that route every reduction kind to its family's file.
#include "kernels/cuda/reduce_kernels.cuh"

namespace ember::cuda {

namespace detail {

// Floating inputs keep their dtype; integers and bool sum to int64 (the shape rule's dtype).
// mean's shape rule admits floating inputs only, so only those are instantiated.
template <template <typename> class Functor, bool FloatingOnly>
int accumulate(DType dtype, const void* input, void* output, void* scratch, const ReduceLayout& layout) {
  int status = 0;
  auto body = [&](auto zero) {
    using T = decltype(zero);
    using Acc = accumulate_t<T>;
    using Out = std::conditional_t<std::is_same_v<Acc, int64_t>, int64_t, T>;
    status = run_reduce(static_cast<const T*>(input), static_cast<Out*>(output), scratch, layout,
                        FunctorReducer<Acc, Functor>{});
  };
  if constexpr (FloatingOnly) {
    dispatch_floating(dtype, body);
  } else {
    dispatch_all(dtype, body);
  }
  return status;
}

// any / all read every dtype as bool (nonzero, NaN included) and write bool.
template <template <typename> class Functor>
int logical(DType dtype, const void* input, void* output, void* scratch, const ReduceLayout& layout) {
  int status = 0;
  dispatch_all(dtype, [&](auto zero) {
    using T = decltype(zero);
    status = run_reduce(static_cast<const T*>(input), static_cast<bool*>(output), scratch, layout,
                        FunctorReducer<bool, Functor>{});
  });
  return status;
}

int launch_sum_family(ReduceKind kind, DType dtype, const void* input, void* output, void* scratch,
                      const ReduceLayout& layout) {
  switch (kind) {
    case ReduceKind::Mean: return accumulate<fn::MeanReduce, true>(dtype, input, output, scratch, layout);
    case ReduceKind::Prod: return accumulate<fn::ProdReduce, false>(dtype, input, output, scratch, layout);
    case ReduceKind::Any: return logical<fn::AnyReduce>(dtype, input, output, scratch, layout);
    case ReduceKind::All: return logical<fn::AllReduce>(dtype, input, output, scratch, layout);
    default: return accumulate<fn::SumReduce, false>(dtype, input, output, scratch, layout);
  }
}

}  // namespace detail

int64_t reduce_scratch_bytes(ReduceKind, DType, const ReduceLayout& layout) {
  const int64_t splits = detail::split_count(layout);
  if (splits == 1) return 0;
  return splits * layout.outer * layout.inner * detail::kScratchPerAccumulator;
}

int launch_reduce(ReduceKind kind, DType dtype, const void* input, void* output, void* scratch,
                  const ReduceLayout& layout, int64_t correction) {
  switch (kind) {
    case ReduceKind::Sum:
    case ReduceKind::Mean:
    case ReduceKind::Prod:
    case ReduceKind::Any:
    case ReduceKind::All: return detail::launch_sum_family(kind, dtype, input, output, scratch, layout);
    case ReduceKind::Max:
    case ReduceKind::Min: return detail::launch_extremum_family(kind, dtype, input, output, scratch, layout);
    default: return detail::launch_stats_family(kind, dtype, input, output, scratch, layout, correction);
  }
}

}  // namespace ember::cuda
