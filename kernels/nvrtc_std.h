// The slice of the C++ standard library that kernels/*.h use, for NVRTC, which ships no standard
// headers. The NVRTC compiler hands this file to programs under the names <cmath>, <limits>,
// <type_traits>, <cstdint>, <cstring>, so the shared functors compile unchanged. (libcu++'s
// <cuda/std/...> would do too, but parsing it costs ~2 s per program against ~0.2 s for this.)
// Constants come from bit patterns (__builtin_bit_cast): NVRTC has no __builtin_huge_valf/nanf.
// float and double math call CUDA's own functions by exact name (expf for float), the same
// functions nvcc's <cmath> overloads reach, so generated kernels compute what nvcc-built ones do.
#pragma once

#if !defined(__CUDACC_RTC__)
#error "kernels/nvrtc_std.h is for NVRTC programs only; host and nvcc code use the real headers"
#endif

// ---- <cstdint>: the LP64 spellings glibc uses, so host and device agree on every type ----
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long uint64_t;
typedef long intptr_t;
typedef unsigned long uintptr_t;

namespace std {
using ::int16_t;
using ::int32_t;
using ::int64_t;
using ::int8_t;
using ::uint16_t;
using ::uint32_t;
using ::uint64_t;
using ::uint8_t;
typedef unsigned long size_t;
typedef long ptrdiff_t;

// ---- <cstring> ----
inline void* memcpy(void* destination, const void* source, size_t bytes) {
  return ::memcpy(destination, source, bytes);
}

// ---- <type_traits> ----
template <typename T, T v> struct integral_constant {
  static constexpr T value = v;
};
using true_type = integral_constant<bool, true>;
using false_type = integral_constant<bool, false>;

template <typename A, typename B> struct is_same : false_type {};
template <typename A> struct is_same<A, A> : true_type {};
template <typename A, typename B> inline constexpr bool is_same_v = is_same<A, B>::value;

template <typename T> struct remove_cv { using type = T; };
template <typename T> struct remove_cv<const T> { using type = T; };
template <typename T> struct remove_cv<volatile T> { using type = T; };
template <typename T> struct remove_cv<const volatile T> { using type = T; };
template <typename T> using remove_cv_t = typename remove_cv<T>::type;

template <bool condition, typename T = void> struct enable_if {};
template <typename T> struct enable_if<true, T> { using type = T; };
template <bool condition, typename T = void> using enable_if_t = typename enable_if<condition, T>::type;
template <bool condition, typename A, typename B> struct conditional { using type = A; };
template <typename A, typename B> struct conditional<false, A, B> { using type = B; };
template <bool condition, typename A, typename B>
using conditional_t = typename conditional<condition, A, B>::type;

namespace nvrtc_detail {
template <typename T> struct floating : false_type {};
template <> struct floating<float> : true_type {};
template <> struct floating<double> : true_type {};
template <typename T> struct integral : false_type {};
template <> struct integral<bool> : true_type {};
template <> struct integral<char> : true_type {};
template <> struct integral<signed char> : true_type {};
template <> struct integral<unsigned char> : true_type {};
template <> struct integral<short> : true_type {};
template <> struct integral<unsigned short> : true_type {};
template <> struct integral<int> : true_type {};
template <> struct integral<unsigned int> : true_type {};
template <> struct integral<long> : true_type {};
template <> struct integral<unsigned long> : true_type {};
template <> struct integral<long long> : true_type {};
template <> struct integral<unsigned long long> : true_type {};
template <typename T> struct to_unsigned { using type = T; };  // unsigned types map to themselves
template <> struct to_unsigned<char> { using type = unsigned char; };
template <> struct to_unsigned<signed char> { using type = unsigned char; };
template <> struct to_unsigned<short> { using type = unsigned short; };
template <> struct to_unsigned<int> { using type = unsigned int; };
template <> struct to_unsigned<long> { using type = unsigned long; };
template <> struct to_unsigned<long long> { using type = unsigned long long; };
}  // namespace nvrtc_detail

template <typename T> struct is_floating_point : nvrtc_detail::floating<remove_cv_t<T>> {};
template <typename T> inline constexpr bool is_floating_point_v = is_floating_point<T>::value;
template <typename T> struct is_integral : nvrtc_detail::integral<remove_cv_t<T>> {};
template <typename T> inline constexpr bool is_integral_v = is_integral<T>::value;
template <typename T> inline constexpr bool is_arithmetic_v = is_integral_v<T> || is_floating_point_v<T>;
template <typename T> inline constexpr bool is_signed_v = is_arithmetic_v<T> && T(-1) < T(0);
template <typename T> struct make_unsigned { using type = typename nvrtc_detail::to_unsigned<T>::type; };
template <typename T> using make_unsigned_t = typename make_unsigned<T>::type;

// ---- <limits> ----
template <typename T> struct numeric_limits {
  static constexpr bool is_specialized = false;
};

// Integers: the range follows from the width and signedness (two's complement).
template <typename T> struct nvrtc_integer_limits {
  static constexpr bool is_specialized = true;
  static constexpr bool is_integer = true;
  static constexpr bool is_signed = T(-1) < T(0);
  static constexpr bool has_infinity = false;
  static constexpr bool has_quiet_NaN = false;
  static constexpr int digits = static_cast<int>(sizeof(T) * 8) - (is_signed ? 1 : 0);
  static constexpr T max() {
    return static_cast<T>((static_cast<unsigned long long>(1) << (digits - 1)) * 2 - 1);
  }
  static constexpr T min() { return is_signed ? static_cast<T>(-max() - 1) : T(0); }
  static constexpr T lowest() { return min(); }
};
template <> struct numeric_limits<bool> : nvrtc_integer_limits<unsigned char> {
  static constexpr int digits = 1;
  static constexpr bool max() { return true; }
  static constexpr bool min() { return false; }
  static constexpr bool lowest() { return false; }
};
template <> struct numeric_limits<char> : nvrtc_integer_limits<char> {};
template <> struct numeric_limits<signed char> : nvrtc_integer_limits<signed char> {};
template <> struct numeric_limits<unsigned char> : nvrtc_integer_limits<unsigned char> {};
template <> struct numeric_limits<short> : nvrtc_integer_limits<short> {};
template <> struct numeric_limits<unsigned short> : nvrtc_integer_limits<unsigned short> {};
template <> struct numeric_limits<int> : nvrtc_integer_limits<int> {};
template <> struct numeric_limits<unsigned int> : nvrtc_integer_limits<unsigned int> {};
template <> struct numeric_limits<long> : nvrtc_integer_limits<long> {};
template <> struct numeric_limits<unsigned long> : nvrtc_integer_limits<unsigned long> {};
template <> struct numeric_limits<long long> : nvrtc_integer_limits<long long> {};
template <> struct numeric_limits<unsigned long long> : nvrtc_integer_limits<unsigned long long> {};

template <> struct numeric_limits<float> {
  static constexpr bool is_specialized = true;
  static constexpr bool is_integer = false;
  static constexpr bool is_signed = true;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr int digits = 24;
  static constexpr float max() { return 3.40282346638528859812e+38f; }
  static constexpr float min() { return 1.17549435082228750797e-38f; }  // smallest normal
  static constexpr float lowest() { return -max(); }
  static constexpr float epsilon() { return 1.1920928955078125e-07f; }  // 2^-23
  static constexpr float denorm_min() { return 1.40129846432481707092e-45f; }
  static constexpr float infinity() { return __builtin_bit_cast(float, 0x7f800000u); }
  static constexpr float quiet_NaN() { return __builtin_bit_cast(float, 0x7fc00000u); }
};
template <> struct numeric_limits<double> {
  static constexpr bool is_specialized = true;
  static constexpr bool is_integer = false;
  static constexpr bool is_signed = true;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr int digits = 53;
  static constexpr double max() { return 1.79769313486231570815e+308; }
  static constexpr double min() { return 2.22507385850720138309e-308; }
  static constexpr double lowest() { return -max(); }
  static constexpr double epsilon() { return 2.22044604925031308085e-16; }  // 2^-52
  static constexpr double denorm_min() { return 4.94065645841246544177e-324; }
  static constexpr double infinity() { return __builtin_bit_cast(double, 0x7ff0000000000000ul); }
  static constexpr double quiet_NaN() { return __builtin_bit_cast(double, 0x7ff8000000000000ul); }
};

// ---- <cmath>: one float and one double overload per function, each calling CUDA's function ----
inline int abs(int x) { return ::abs(x); }
inline long abs(long x) { return ::labs(x); }
inline long long abs(long long x) { return ::llabs(x); }
inline float abs(float x) { return ::fabsf(x); }
inline double abs(double x) { return ::fabs(x); }
inline float fabs(float x) { return ::fabsf(x); }
inline double fabs(double x) { return ::fabs(x); }
inline bool isnan(float x) { return x != x; }
inline bool isnan(double x) { return x != x; }
inline bool isinf(float x) { return ::fabsf(x) == numeric_limits<float>::infinity(); }
inline bool isinf(double x) { return ::fabs(x) == numeric_limits<double>::infinity(); }
inline bool isfinite(float x) { return ::fabsf(x) < numeric_limits<float>::infinity(); }
inline bool isfinite(double x) { return ::fabs(x) < numeric_limits<double>::infinity(); }
inline bool signbit(float x) { return ::signbit(x); }
inline bool signbit(double x) { return ::signbit(x); }

#define EMBER_NVRTC_UNARY(name)                              \
  inline float name(float x) { return ::name##f(x); }        \
  inline double name(double x) { return ::name(x); }
#define EMBER_NVRTC_BINARY(name)                                        \
  inline float name(float x, float y) { return ::name##f(x, y); }       \
  inline double name(double x, double y) { return ::name(x, y); }
EMBER_NVRTC_UNARY(sqrt)
EMBER_NVRTC_UNARY(cbrt)
EMBER_NVRTC_UNARY(exp)
EMBER_NVRTC_UNARY(exp2)
EMBER_NVRTC_UNARY(expm1)
EMBER_NVRTC_UNARY(log)
EMBER_NVRTC_UNARY(log2)
EMBER_NVRTC_UNARY(log10)
EMBER_NVRTC_UNARY(log1p)
EMBER_NVRTC_UNARY(sin)
EMBER_NVRTC_UNARY(cos)
EMBER_NVRTC_UNARY(tan)
EMBER_NVRTC_UNARY(asin)
EMBER_NVRTC_UNARY(acos)
EMBER_NVRTC_UNARY(atan)
EMBER_NVRTC_UNARY(sinh)
EMBER_NVRTC_UNARY(cosh)
EMBER_NVRTC_UNARY(tanh)
EMBER_NVRTC_UNARY(asinh)
EMBER_NVRTC_UNARY(acosh)
EMBER_NVRTC_UNARY(atanh)
EMBER_NVRTC_UNARY(erf)
EMBER_NVRTC_UNARY(erfc)
EMBER_NVRTC_UNARY(lgamma)
EMBER_NVRTC_UNARY(floor)
EMBER_NVRTC_UNARY(ceil)
EMBER_NVRTC_UNARY(trunc)
EMBER_NVRTC_UNARY(round)
EMBER_NVRTC_UNARY(nearbyint)
EMBER_NVRTC_UNARY(rint)
EMBER_NVRTC_BINARY(pow)
EMBER_NVRTC_BINARY(fmod)
EMBER_NVRTC_BINARY(fmin)
EMBER_NVRTC_BINARY(fmax)
EMBER_NVRTC_BINARY(atan2)
EMBER_NVRTC_BINARY(copysign)
EMBER_NVRTC_BINARY(hypot)
EMBER_NVRTC_BINARY(remainder)
#undef EMBER_NVRTC_UNARY
#undef EMBER_NVRTC_BINARY
// x y + z rounded once (special_error.h splits x^2 into two doubles with it).
inline float fma(float x, float y, float z) { return ::fmaf(x, y, z); }
inline double fma(double x, double y, double z) { return ::fma(x, y, z); }

}  // namespace std
