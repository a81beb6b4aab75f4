// Portable SIMD vectors for the CPU kernels: GCC/Clang vector extensions sized to the widest
// registers the build targets (64 bytes with AVX-512, 32 with AVX, else 16), so a kernel written
// with them becomes AVX-512 or AVX2 + FMA code under -march=native and still builds, as narrower
// instructions, without it.
#pragma once

#include <cstdint>
#include <cstring>

namespace ember::cpu::simd {

#if defined(__AVX512F__)
inline constexpr int kVectorBytes = 64;
#elif defined(__AVX__)
inline constexpr int kVectorBytes = 32;
#else
inline constexpr int kVectorBytes = 16;
#endif

template <typename T>
struct Lanes {
  typedef T Vector __attribute__((vector_size(kVectorBytes)));
  static constexpr int64_t kCount = kVectorBytes / sizeof(T);
};

template <typename T>
using Vector = typename Lanes<T>::Vector;

// Unaligned: tensors only guarantee element alignment.
template <typename T>
inline Vector<T> load(const T* from) {
  Vector<T> value;
  std::memcpy(&value, from, sizeof value);
  return value;
}

// By value, so the caller's vector can stay in a register (no address taken).
template <typename T>
inline void store(T* to, Vector<T> value) {
  std::memcpy(to, &value, sizeof value);
}

// Lanes added in order, first to last (a fixed order). T is not deduced: horizontal_sum<T>(v).
template <typename T>
inline T horizontal_sum(Vector<T> value) {
  T total = value[0];
  for (int64_t lane = 1; lane < Lanes<T>::kCount; ++lane) total += value[lane];
  return total;
}

}  // namespace ember::cpu::simd
