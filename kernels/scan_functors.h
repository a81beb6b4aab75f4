// The steps of the running reductions beyond the sum and the product (cummax / cummin and
// logcumsumexp), written once for the CPU loops (kernels/cpu/scan_kernels.cpp) and the CUDA
// kernels (kernels/cuda/scan.cu), so both devices compute every element the same way.
#pragma once

#include <cmath>
#include <limits>

#include "kernels/host_device.h"
#include "kernels/reduce_functors.h"

namespace ember::fn {

// cummax / cummin: does `candidate` replace the running extremum `best`? As PyTorch's
// cummax_cummin_helper: >= (<=) so a tie moves to the later index, and a NaN always replaces, so
// a NaN is carried from where it appears and each later NaN records its own index.
template <typename T, bool Max>
struct RunningExtremumReplaces {
  EMBER_HOST_DEVICE bool operator()(T candidate, T best) const {
    if (is_nan(candidate)) return true;
    if (is_nan(best)) return false;
    if constexpr (Max) {
      return candidate >= best;
    } else {
      return candidate <= best;
    }
  }
};

// logcumsumexp's step log(exp(total) + exp(value)) = high + log1p(exp(low - high)), which neither
// overflows nor drops a small term beside a large one. As PyTorch's _log_add_exp_helper: NaN
// propagates, and two equal infinities give that infinity (inf - inf would be NaN); -inf is the
// identity (exp(-inf) = 0).
template <typename Acc>
struct LogAddExp {
  EMBER_HOST_DEVICE Acc identity() const { return -std::numeric_limits<Acc>::infinity(); }
  EMBER_HOST_DEVICE Acc combine(Acc total, Acc value) const {
    if (is_nan(total) || is_nan(value)) return total + value;
    const Acc high = value > total ? value : total;
    const Acc low = value > total ? total : value;
    const Acc infinity = std::numeric_limits<Acc>::infinity();
    if (low == high && (high == infinity || high == -infinity)) return high;
    return std::log1p(std::exp(low - high)) + high;
  }
};

}  // namespace ember::fn
