// CUDA kernels of the comparisons eq, ne, lt, le, gt, ge and the logical ops (bool results,
// inputs in their promoted dtype), of isnan, isinf, isfinite, logical_not (bool results of any
// dtype) and of where(condition, a, b). Math: kernels/functors.h.
#include "kernels/cuda/pointwise.h"
#include "kernels/cuda/pointwise_kernel.cuh"
#include "kernels/functors.h"

namespace ember::cuda {

int launch_compare(CompareOp op, DType dtype, void* out, const StridedOperand& a, const StridedOperand& b,
                   const LaunchShape& shape) {
  if (shape.numel == 0) return 0;
  const OutputOperand dense = detail::dense_output(out);
  const StridedOperand inputs[] = {a, b};
  return detail::dispatch_all(dtype, [&](auto zero) {
    using T = decltype(zero);
    switch (op) {
      case CompareOp::Eq: return detail::launch_pointwise<bool, T, T>(dense, shape, fn::Eq{}, inputs);
      case CompareOp::Ne: return detail::launch_pointwise<bool, T, T>(dense, shape, fn::Ne{}, inputs);
      case CompareOp::Lt: return detail::launch_pointwise<bool, T, T>(dense, shape, fn::Lt{}, inputs);
      case CompareOp::Le: return detail::launch_pointwise<bool, T, T>(dense, shape, fn::Le{}, inputs);
      case CompareOp::Gt: return detail::launch_pointwise<bool, T, T>(dense, shape, fn::Gt{}, inputs);
      case CompareOp::Ge: return detail::launch_pointwise<bool, T, T>(dense, shape, fn::Ge{}, inputs);
      case CompareOp::LogicalAnd: return detail::launch_pointwise<bool, T, T>(dense, shape, fn::LogicalAnd{}, inputs);
      case CompareOp::LogicalOr: return detail::launch_pointwise<bool, T, T>(dense, shape, fn::LogicalOr{}, inputs);
      case CompareOp::LogicalXor: return detail::launch_pointwise<bool, T, T>(dense, shape, fn::LogicalXor{}, inputs);
    }
    return static_cast<int>(cudaErrorInvalidValue);
  });
}

int launch_predicate(PredicateOp op, DType dtype, void* out, const StridedOperand& input, const LaunchShape& shape) {
  if (shape.numel == 0) return 0;
  const OutputOperand dense = detail::dense_output(out);
  const StridedOperand inputs[] = {input};
  return detail::dispatch_all(dtype, [&](auto zero) {
    using T = decltype(zero);
    switch (op) {
      case PredicateOp::IsNan: return detail::launch_pointwise<bool, T>(dense, shape, fn::IsNan{}, inputs);
      case PredicateOp::IsInf: return detail::launch_pointwise<bool, T>(dense, shape, fn::IsInf{}, inputs);
      case PredicateOp::IsFinite: return detail::launch_pointwise<bool, T>(dense, shape, fn::IsFinite{}, inputs);
      case PredicateOp::LogicalNot: return detail::launch_pointwise<bool, T>(dense, shape, fn::LogicalNot{}, inputs);
    }
    return static_cast<int>(cudaErrorInvalidValue);
  });
}

int launch_where(DType dtype, void* out, const StridedOperand& condition, const StridedOperand& a,
                 const StridedOperand& b, const LaunchShape& shape) {
  if (shape.numel == 0) return 0;
  const StridedOperand inputs[] = {condition, a, b};
  return detail::dispatch_all(dtype, [&](auto zero) {
    using T = decltype(zero);
    return detail::launch_pointwise<T, bool, T, T>(detail::dense_output(out), shape, fn::Where{}, inputs);
  });
}

}  // namespace ember::cuda
