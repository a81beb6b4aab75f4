// Portable SIMD vectors for the CPU kernels: GCC/Clang vector extensions sized to the widest
// registers the build targets (64 bytes with AVX-512, 32 with AVX, else 16), so a kernel written
// with them becomes AVX-512 or AVX2 + FMA code under -march=native and still builds, as narrower
// instructions, without it.
#pragma once

#include <cstdint>
#include <cstring>
#include <utility>

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
// lower half, one vector add per level. The order in which small_gemm_dot folds each sum's lanes:
// horizontal_sums computes it for `lanes` vectors at once, and the tests hold the two to it.
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

// Keeps `value` in a register across its uses. GCC 12 folds a vector load into every
// multiply-add that uses the vector (a memory operand each), so a tile that uses each loaded
// vector several times reloads it as often and runs at the load ports' pace, not the FMA units':
// the dot-product tile of small_gemm_dot ran 1.8x slower so. An empty asm that claims to change
// the value makes the compiler load it once. A no-op off x86.
template <typename T>
inline void keep_in_register(Vector<T>& value) {
#if defined(__x86_64__) || defined(__i386__)
  asm("" : "+v"(value));
#endif
}

// A vector of Bytes / sizeof(T) lanes of any width, so that the folds below can be tested at every
// width on one machine (GCC lowers a vector wider than the target's registers to several).
template <typename T, int Bytes>
struct VectorOf {
  typedef T type __attribute__((vector_size(Bytes)));
};

// One level of horizontal_sums and transpose takes two vectors apart and puts them together
// again: in each group of 2 * half lanes, the low half takes the first vector's lanes and the
// high half the second's, lane l of the half from lane l of the group (high: from lane l + half).
// This is the index, in a and b taken as one 2 * lanes vector, of result lane `lane`.
constexpr int fold_index(int lanes, int half, bool high, int lane) {
  const int group = lane / (2 * half) * (2 * half);
  const int offset = lane % (2 * half);
  return (offset >= half ? lanes : 0) + group + offset % half + (high ? half : 0);
}

// That level's shuffle of a and b, with the indices as constants (__builtin_shufflevector: GCC
// 12 and Clang both take it).
template <int Half, bool High, typename V, size_t... Lane>
inline V fold_shuffle(V a, V b, std::index_sequence<Lane...>) {
  constexpr int lanes = static_cast<int>(sizeof...(Lane));
  return __builtin_shufflevector(a, b, fold_index(lanes, Half, High, static_cast<int>(Lane))...);
}

// The lane sums of `lanes` vectors at once: lane i of the result is tree_sum<T, Bytes> of v[i]'s
// lanes bit for bit, because each level adds every lane to the lane half a group away, as
// tree_sum does, while it packs two vectors' halves into one. That is about two shuffles and one
// add per vector, where folding each vector alone spends a shuffle and an add per level on each.
// Overwrites v.
template <typename T, int Bytes = kVectorBytes>
inline typename VectorOf<T, Bytes>::type horizontal_sums(typename VectorOf<T, Bytes>::type* v) {
  constexpr int lanes = Bytes / static_cast<int>(sizeof(T));
  auto level = [v]<int Half>() {
    for (int i = 0; i < Half; ++i)
      v[i] = fold_shuffle<Half, false>(v[i], v[i + Half], std::make_index_sequence<lanes>()) +
             fold_shuffle<Half, true>(v[i], v[i + Half], std::make_index_sequence<lanes>());
  };
  if constexpr (lanes >= 16) level.template operator()<8>();
  if constexpr (lanes >= 8) level.template operator()<4>();
  if constexpr (lanes >= 4) level.template operator()<2>();
  level.template operator()<1>();
  return v[0];
}

// Transposes the lanes x lanes matrix whose row r is v[r], in place: each level swaps the
// off-diagonal Half x Half blocks of every 2 * Half block (row and column bit Half trade
// places), log2(lanes) levels of two shuffles per vector, where a scalar transpose moves every
// element through memory on its own.
template <typename T, int Bytes = kVectorBytes>
inline void transpose(typename VectorOf<T, Bytes>::type* v) {
  constexpr int lanes = Bytes / static_cast<int>(sizeof(T));
  auto level = [v]<int Half>() {
    for (int i = 0; i < lanes; ++i) {
      if ((i & Half) != 0) continue;
      const auto top = v[i];
      v[i] = fold_shuffle<Half, false>(top, v[i + Half], std::make_index_sequence<lanes>());
      v[i + Half] = fold_shuffle<Half, true>(top, v[i + Half], std::make_index_sequence<lanes>());
    }
  };
  if constexpr (lanes >= 16) level.template operator()<8>();
  if constexpr (lanes >= 8) level.template operator()<4>();
  if constexpr (lanes >= 4) level.template operator()<2>();
  level.template operator()<1>();
}

}  // namespace ember::cpu::simd
