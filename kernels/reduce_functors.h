// The math of reductions, written once for the CPU loops and the CUDA kernels: an identity, a
// combine of two partial results (associative, so lanes and chunks may be merged in a fixed
// tree) and a finish that turns the accumulator into the output value.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "kernels/host_device.h"

namespace ember::fn {

// True only for NaN; integer and bool values are never NaN.
template <typename T>
EMBER_HOST_DEVICE bool is_nan(T value) {
  if constexpr (std::numeric_limits<T>::has_quiet_NaN) {
    return value != value;
  } else {
    return false;
  }
}

template <typename Acc>
struct SumReduce {
  EMBER_HOST_DEVICE Acc identity() const { return Acc(0); }
  // Integer sums wrap around like PyTorch's (signed overflow is undefined behaviour in C++).
  EMBER_HOST_DEVICE Acc combine(Acc a, Acc b) const {
    if constexpr (std::is_integral_v<Acc> && !std::is_same_v<Acc, bool>) {
      using Unsigned = std::make_unsigned_t<Acc>;
      return static_cast<Acc>(static_cast<Unsigned>(a) + static_cast<Unsigned>(b));
    } else {
      return a + b;
    }
  }
  EMBER_HOST_DEVICE Acc finish(Acc a, int64_t) const { return a; }
};

// Mean of no elements is 0/0 = NaN, like torch.mean.
template <typename Acc>
struct MeanReduce {
  EMBER_HOST_DEVICE Acc identity() const { return Acc(0); }
  EMBER_HOST_DEVICE Acc combine(Acc a, Acc b) const { return a + b; }
  EMBER_HOST_DEVICE Acc finish(Acc a, int64_t count) const { return a / static_cast<Acc>(count); }
};

// Integer products wrap around like PyTorch's, as sums do; the product of nothing is 1.
template <typename Acc>
struct ProdReduce {
  EMBER_HOST_DEVICE Acc identity() const { return Acc(1); }
  EMBER_HOST_DEVICE Acc combine(Acc a, Acc b) const {
    if constexpr (std::is_integral_v<Acc> && !std::is_same_v<Acc, bool>) {
      using Unsigned = std::make_unsigned_t<Acc>;
      return static_cast<Acc>(static_cast<Unsigned>(a) * static_cast<Unsigned>(b));
    } else {
      return a * b;
    }
  }
  EMBER_HOST_DEVICE Acc finish(Acc a, int64_t) const { return a; }
};

// any / all over bool accumulators: an element is lifted to bool as "nonzero" (NaN is nonzero),
// and no elements give any = false, all = true, as in PyTorch.
template <typename Acc>
struct AnyReduce {
  EMBER_HOST_DEVICE Acc identity() const { return Acc(false); }
  EMBER_HOST_DEVICE Acc combine(Acc a, Acc b) const { return a || b; }
  EMBER_HOST_DEVICE Acc finish(Acc a, int64_t) const { return a; }
};
template <typename Acc>
struct AllReduce {
  EMBER_HOST_DEVICE Acc identity() const { return Acc(true); }
  EMBER_HOST_DEVICE Acc combine(Acc a, Acc b) const { return a && b; }
  EMBER_HOST_DEVICE Acc finish(Acc a, int64_t) const { return a; }
};

// NaN wins (torch.amax propagates NaN): a NaN `a` is kept because no comparison with it is true.
template <typename Acc>
struct MaxReduce {
  EMBER_HOST_DEVICE Acc identity() const {
    return std::numeric_limits<Acc>::has_infinity ? -std::numeric_limits<Acc>::infinity()
                                                  : std::numeric_limits<Acc>::lowest();
  }
  EMBER_HOST_DEVICE Acc combine(Acc a, Acc b) const { return (b > a || is_nan(b)) ? b : a; }
  EMBER_HOST_DEVICE Acc finish(Acc a, int64_t) const { return a; }
};

template <typename Acc>
struct MinReduce {
  EMBER_HOST_DEVICE Acc identity() const {
    return std::numeric_limits<Acc>::has_infinity ? std::numeric_limits<Acc>::infinity()
                                                  : std::numeric_limits<Acc>::max();
  }
  EMBER_HOST_DEVICE Acc combine(Acc a, Acc b) const { return (b < a || is_nan(b)) ? b : a; }
  EMBER_HOST_DEVICE Acc finish(Acc a, int64_t) const { return a; }
};

// argmax / argmin step: does `candidate` replace the best value so far? Strict comparison keeps
// the first index on ties; the first NaN wins and stays (torch.argmax treats NaN as the maximum).
template <typename T>
struct ArgMaxBetter {
  EMBER_HOST_DEVICE bool operator()(T candidate, T best) const {
    return !is_nan(best) && (candidate > best || is_nan(candidate));
  }
};
template <typename T>
struct ArgMinBetter {
  EMBER_HOST_DEVICE bool operator()(T candidate, T best) const {
    return !is_nan(best) && (candidate < best || is_nan(candidate));
  }
};

}  // namespace ember::fn
