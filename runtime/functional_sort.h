// Ordering along a dim, as torch.sort, argsort, topk and kthvalue: (values, int64 indices) pairs,
// as libtorch's std::tuple<Tensor, Tensor>. sort and topk are registry ops (runtime/ops/sort_ops.cpp);
// argsort and kthvalue are composites over sort (functional_sort.cpp). Included by runtime/functional.h.
//
// The order is PyTorch's: NaN counts as larger than every number (last ascending, first
// descending; a NaN's index is returned like any other's). Every sort is stable: equal values keep
// their input order in both directions, so `stable` holds whether or not it is asked for (PyTorch
// promises it only with stable = true). The gradient of the values reaches the elements they came
// from; the indices have no gradient.
#pragma once

#include <cstdint>
#include <tuple>

#include "runtime/tensor.h"

namespace ember {

// sort: attrs dim, descending. Every dtype, bool included. A 0-d input is its own result, index 0.
std::tuple<Tensor, Tensor> sort(const Tensor& a, int64_t dim = -1, bool descending = false, bool stable = false,
                                Where where = Where::current());
// The indices of sort(a, dim, descending).
Tensor argsort(const Tensor& a, int64_t dim = -1, bool descending = false, bool stable = false,
               Where where = Where::current());
// topk: attrs k, dim, largest, sorted. The k largest (smallest when !largest) elements along dim,
// in sort's order: ties go to the earlier element (PyTorch leaves their order unspecified), and
// the result is sorted even when `sorted` is false (PyTorch's order is then unspecified). k in
// [0, size(dim)]; a 0-d input takes k = 0 or 1 and gives a 0-d result (as PyTorch's). Not for bool
// tensors, as in PyTorch.
std::tuple<Tensor, Tensor> topk(const Tensor& a, int64_t k, int64_t dim = -1, bool largest = true,
                                bool sorted = true, Where where = Where::current());
// Composite: the k-th smallest element along dim (k from 1) and its index: element k - 1 of the
// ascending stable sort, so of equal values the k-th in input order is chosen (PyTorch's choice
// among ties is unspecified). Costs a full sort where PyTorch selects in linear time. Not for bool.
std::tuple<Tensor, Tensor> kthvalue(const Tensor& a, int64_t k, int64_t dim = -1, bool keepdim = false,
                                    Where where = Where::current());

}  // namespace ember
