// Factories and copies on the CPU.
#include "kernels/cpu/copy_kernels.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/parallel_for.h"
#include "kernels/cpu/philox_stream.h"
#include "kernels/cpu/pointwise_loop.h"
#include "kernels/functors.h"
#include "kernels/philox.h"
#include "runtime/memory/overlap.h"

namespace ember::cpu {

namespace {

// Element i of a random tensor uses stream words 2i and 2i+1 (the wrapper reserved 2 per element):
// fills `out` with value(word 2i, word 2i+1), reading the stream one block per two elements.
template <typename T, typename Value>
void generate_random(const Tensor& out, const OpCall& call, Value value) {
  const uint64_t seed = static_cast<uint64_t>(call.attrs.get<int64_t>("seed"));
  const uint64_t offset = static_cast<uint64_t>(call.attrs.get<int64_t>("offset"));
  T* data = out.data_ptr<T>();
  // Element i reads words 2i and 2i+1 wherever its range starts: values never depend on threads.
  parallel_ranges(out.numel(), [&](int64_t begin, int64_t end) {
    PhiloxStream stream(seed, offset, 2 * static_cast<uint64_t>(begin));
    // A batch of words at a time, so the loop below has no refill branch and can vectorize.
    constexpr int64_t kBatch = 256;
    uint32_t words[2 * kBatch];
    for (int64_t first = begin; first < end; first += kBatch) {
      const int64_t count = std::min(kBatch, end - first);
      stream.read(words, 2 * count);
      T* to = data + first;
      for (int64_t i = 0; i < count; ++i) to[i] = static_cast<T>(value(words[2 * i], words[2 * i + 1]));
    }
  });
}

}  // namespace

void empty_kernel(const OpCall&, TensorList&) {}

void full_kernel(const OpCall& call, TensorList& outputs) {
  const double value = call.attrs.get<double>("value");
  dispatch_dtype(outputs[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T filled = static_cast<T>(fn::detail::convert<compute_t<T>>(value));
    generate(outputs[0].data_ptr<T>(), outputs[0].numel(), [&](int64_t) { return filled; });
  });
}

// float64 takes 53 bits from both words; narrower types take only as many bits of word 2i as their
// significand holds, because rounding a finer value to the type could give exactly 1.
void rand_kernel(const OpCall& call, TensorList& outputs) {
  dispatch_floating(outputs[0].dtype(), "rand", [&](auto zero) {
    using T = decltype(zero);
    constexpr int significand_bits = std::is_same_v<T, BFloat16> ? 8 : std::is_same_v<T, Float16> ? 11 : 24;
    generate_random<T>(outputs[0], call, [](uint32_t first, uint32_t second) {
      if constexpr (std::is_same_v<T, double>) {
        return uniform_double_from_words(first, second);
      } else {
        return static_cast<compute_t<T>>(uniform_from_word_bits(first, significand_bits));
      }
    });
  });
}

void randn_kernel(const OpCall& call, TensorList& outputs) {
  dispatch_floating(outputs[0].dtype(), "randn", [&](auto zero) {
    using T = decltype(zero);
    generate_random<T>(outputs[0], call, [](uint32_t first, uint32_t second) {
      // Box-Muller on the element's own two words: u1 in (0, 1] keeps log() finite.
      const double u1 = 1.0 - static_cast<double>(first) / 4294967296.0;
      const double u2 = static_cast<double>(second) / 4294967296.0;
      return static_cast<compute_t<T>>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2));
    });
  });
}

// The op's shape rule has checked that every value of [low, high) is exact in the dtype, so the
// integer converts directly (through double, int64 values above 2^53 lost their low bits).
void randint_kernel(const OpCall& call, TensorList& outputs) {
  const int64_t low = call.attrs.get<int64_t>("low");
  const uint64_t range = static_cast<uint64_t>(call.attrs.get<int64_t>("high")) - static_cast<uint64_t>(low);
  dispatch_dtype(outputs[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    generate_random<T>(outputs[0], call, [&](uint32_t first, uint32_t second) {
      return static_cast<compute_t<T>>(randint_from_words(low, range, first, second));
    });
  });
}

void convert_into(const Tensor& destination, const Tensor& source) {
  dispatch_dtype(destination.dtype(), [&](auto out_zero) {
    using Out = decltype(out_zero);
    dispatch_dtype(source.dtype(), [&](auto in_zero) {
      using In = decltype(in_zero);
      pointwise_cpu<Out, In>(destination, [](auto value) { return fn::detail::convert<compute_t<Out>>(value); },
                             source);
    });
  });
}

void clone_kernel(const OpCall& call, TensorList& outputs) { convert_into(outputs[0], call.input(0)); }

void copy_inplace_kernel(const OpCall& call, TensorList& outputs) { convert_into(outputs[0], call.input(1)); }

void fill(const Tensor& target, double value) {
  // An expanded target's repeats are one address: written once, by one thread.
  const Tensor distinct = without_repeats(target);
  dispatch_dtype(distinct.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const compute_t<T> filled = fn::detail::convert<compute_t<T>>(value);
    pointwise_cpu<T>(distinct, [filled]() { return filled; });
  });
}

void fill_inplace_kernel(const OpCall& call, TensorList& outputs) { fill(outputs[0], call.attrs.get<double>("value")); }

void zero_inplace_kernel(const OpCall&, TensorList& outputs) { fill(outputs[0], 0.0); }

}  // namespace ember::cpu
