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

// The sum of the `Bytes / sizeof(T)` values at `values`, as a tree: the upper half added onto the
// lower half, one vector add per level.
template <typename T, int Bytes>
inline T tree_sum(const T* values) {
  if constexpr (Bytes == 2 * static_cast<int>(sizeof(T))) {
    return values[0] + values[1];
  } else {
    typedef T Half __attribute__((vector_size(Bytes / 2)));
    Half low, high;
    std::memcpy(&low, values, sizeof low);
    std::memcpy(&high, values + Bytes / 2 / sizeof(T), sizeof high);
    const Half sum = low + high;
    T folded[Bytes / 2 / sizeof(T)];
    std::memcpy(folded, &sum, sizeof sum);
    return tree_sum<T, Bytes / 2>(folded);
  }
}

// The lanes' sum in a fixed order (a tree of halves: log2(lanes) vector adds, where adding lane
// by lane is lanes - 1 dependent scalar adds, each after moving a lane out of the register).
// T is not deduced: horizontal_sum<T>(v).
template <typename T>
inline T horizontal_sum(Vector<T> value) {
  T lanes[Lanes<T>::kCount];
  std::memcpy(lanes, &value, sizeof value);
  return tree_sum<T, kVectorBytes>(lanes);
}

}  // namespace ember::cpu::simd
