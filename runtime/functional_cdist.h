// torch.cdist: the p-norm distance between every row of x1 and every row of x2, batched. A
// composite of registry ops (runtime/functional_cdist.cpp), so autograd, CUDA and capture come from
// the ops it calls. Included by runtime/functional.h.
#pragma once

#include "runtime/tensor.h"

namespace ember {

// torch.cdist's compute_mode strings: 'use_mm_for_euclid_dist_if_necessary' (the default: the
// matrix-product form for p = 2 when either input has more than 25 rows),
// 'use_mm_for_euclid_dist' (always for p = 2) and 'donot_use_mm_for_euclid_dist' (never).
enum class CdistComputeMode { UseMmForEuclidDistIfNecessary, UseMmForEuclidDist, DonotUseMmForEuclidDist };

// x1 [*B1, R1, M] and x2 [*B2, R2, M] give [*B, R1, R2], B the broadcast of B1 and B2, with
// out[b, i, j] = || x1[b, i] - x2[b, j] ||_p over the M columns:
//   p = 0:    the number of columns that differ (min(ceil(|d|), 1) summed, PyTorch's form)
//   p = 1:    sum |d|;   p = 2: sqrt(sum d^2);   p = inf: max |d|;   else (sum |d|^p)^(1/p)
// (the direct form materializes the R1 x R2 x M differences). The matrix-product form of p = 2
// (PyTorch's _euclidean_dist) is sqrt(max(|a|^2 - 2 a.b + |b|^2, 1e-30)): faster, but it loses
// precision for close rows, as PyTorch's does. Gradients are PyTorch's (_cdist_backward): 0 for
// p = 0, and 0 where a distance is 0 for p = 2 and the general p (and where d = 0 for p < 1);
// for p = inf every column tied at the maximum gets the whole gradient times sign(d) (an infinite
// distance passes none). Both inputs must be floating, of one dtype and device, with at least 2
// dims and the same M; p >= 0. No columns (M = 0) give zeros. Under autocast, 16-bit inputs run
// in float32 (PyTorch's autocast float32 list).
Tensor cdist(const Tensor& x1, const Tensor& x2, double p = 2.0,
             CdistComputeMode compute_mode = CdistComputeMode::UseMmForEuclidDistIfNecessary,
             Where where = Where::current());

}  // namespace ember
