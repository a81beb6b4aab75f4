// libmvec's entry points follow the x86-64 vector function ABI: _ZGV<isa>N<lanes>v_<name>, isa b
// (SSE), c (AVX), d (AVX2) or e (AVX-512), one vector argument in and one out. The variant is
// picked at compile time to match simd::kVectorBytes, so a call passes one of our vectors as is.
#include "kernels/cpu/vector_exp.h"

#include <cmath>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/simd_vector.h"

#if defined(EMBER_HAS_LIBMVEC) && defined(__x86_64__)
#define EMBER_VECTOR_EXP 1
using FloatVector = ember::cpu::simd::Vector<float>;
using DoubleVector = ember::cpu::simd::Vector<double>;
extern "C" {
#if defined(__AVX512F__)
FloatVector _ZGVeN16v_expf(FloatVector);
DoubleVector _ZGVeN8v_exp(DoubleVector);
#define EMBER_EXPF _ZGVeN16v_expf
#define EMBER_EXP _ZGVeN8v_exp
#elif defined(__AVX2__)
FloatVector _ZGVdN8v_expf(FloatVector);
DoubleVector _ZGVdN4v_exp(DoubleVector);
#define EMBER_EXPF _ZGVdN8v_expf
#define EMBER_EXP _ZGVdN4v_exp
#elif defined(__AVX__)
FloatVector _ZGVcN8v_expf(FloatVector);
DoubleVector _ZGVcN4v_exp(DoubleVector);
#define EMBER_EXPF _ZGVcN8v_expf
#define EMBER_EXP _ZGVcN4v_exp
#else
FloatVector _ZGVbN4v_expf(FloatVector);
DoubleVector _ZGVbN2v_exp(DoubleVector);
#define EMBER_EXPF _ZGVbN4v_expf
#define EMBER_EXP _ZGVbN2v_exp
#endif
}
#endif

namespace ember::cpu {

namespace {

#ifdef EMBER_VECTOR_EXP
template <typename T, typename Function>
void vector_exp(T* values, int64_t count, Function function) {
  using Vector = simd::Vector<T>;
  constexpr int64_t kLanes = simd::Lanes<T>::kCount;
  int64_t i = 0;
  for (; i + kLanes <= count; i += kLanes) simd::store(values + i, function(simd::load<T>(values + i)));
  if (i == count) return;
  // The tail through a padded vector: zeros in the unused lanes, whose results are dropped.
  T padded[kLanes] = {};
  std::memcpy(padded, values + i, sizeof(T) * (count - i));
  const Vector result = function(simd::load<T>(padded));
  std::memcpy(values + i, &result, sizeof(T) * (count - i));
}
#endif

template <typename T>
void exp_array(T* values, int64_t count) {
#ifdef EMBER_VECTOR_EXP
  if constexpr (std::is_same_v<T, float>) {
    vector_exp(values, count, [](FloatVector v) { return EMBER_EXPF(v); });
  } else {
    vector_exp(values, count, [](DoubleVector v) { return EMBER_EXP(v); });
  }
#else
  for (int64_t i = 0; i < count; ++i) values[i] = std::exp(values[i]);
#endif
}

}  // namespace

void exp_in_place(float* values, int64_t count) { exp_array(values, count); }
void exp_in_place(double* values, int64_t count) { exp_array(values, count); }

bool vector_exp_from_libmvec() {
#ifdef EMBER_VECTOR_EXP
  return true;
#else
  return false;
#endif
}

}  // namespace ember::cpu
