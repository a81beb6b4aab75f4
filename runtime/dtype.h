// Element types: the DType enum, sizes, names, promotion, and the one switch that turns a runtime
// dtype into a compile-time type (dispatch_dtype).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kernels/half_types.h"
#include "runtime/error.h"

namespace ember {

enum class DType : uint8_t { Float32, Float64, BFloat16, Float16, Int32, Int64, Bool };

constexpr DType kFloat32 = DType::Float32;
constexpr DType kFloat64 = DType::Float64;
constexpr DType kBFloat16 = DType::BFloat16;
constexpr DType kFloat16 = DType::Float16;
constexpr DType kInt32 = DType::Int32;
constexpr DType kInt64 = DType::Int64;
constexpr DType kBool = DType::Bool;

constexpr size_t element_size(DType dtype) {
  switch (dtype) {
    case DType::Float64: case DType::Int64: return 8;
    case DType::Float32: case DType::Int32: return 4;
    case DType::BFloat16: case DType::Float16: return 2;
    case DType::Bool: return 1;
  }
  return 0;
}

constexpr std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::BFloat16: return "bfloat16";
    case DType::Float16: return "float16";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::Bool: return "bool";
  }
  return "?";
}

constexpr bool is_floating(DType dtype) {
  return dtype == DType::Float32 || dtype == DType::Float64 || dtype == DType::BFloat16 ||
         dtype == DType::Float16;
}
constexpr bool is_integral(DType dtype) { return !is_floating(dtype); }  // bool counts as integral

// The type in which CPU kernels compute a dtype: fp32 for the 16-bit floats.
template <typename T> struct ComputeType { using type = T; };
template <> struct ComputeType<BFloat16> { using type = float; };
template <> struct ComputeType<Float16> { using type = float; };
template <typename T> using compute_t = typename ComputeType<T>::type;

template <typename T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::Float32; }
template <> constexpr DType dtype_of<double>() { return DType::Float64; }
template <> constexpr DType dtype_of<BFloat16>() { return DType::BFloat16; }
template <> constexpr DType dtype_of<Float16>() { return DType::Float16; }
template <> constexpr DType dtype_of<int32_t>() { return DType::Int32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::Int64; }
template <> constexpr DType dtype_of<bool>() { return DType::Bool; }

// PyTorch-style promotion of two tensor dtypes: bool < ints < floats; the wider float wins;
// bf16 with fp16 goes to fp32.
DType promote_types(DType a, DType b);
// The dtype of an op over two tensors, as PyTorch's result_type: a 0-d tensor (a number held in a
// tensor: a loss scale, a learned scalar) counts only when its category (bool < integer <
// floating) is above that of a tensor with dims, so bf16[n] * f32[] stays bf16, int32[n] + int64[]
// stays int32, and int32[n] * f64[] is f64. Two tensors of the same kind promote as above.
DType result_type(DType a, bool a_is_0d, DType b, bool b_is_0d);

// Calls fn(T{}) with T the C++ type of `dtype`. The single runtime-to-template switch.
template <typename Fn>
decltype(auto) dispatch_dtype(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Float32: return fn(float{});
    case DType::Float64: return fn(double{});
    case DType::BFloat16: return fn(BFloat16{});
    case DType::Float16: return fn(Float16{});
    case DType::Int32: return fn(int32_t{});
    case DType::Int64: return fn(int64_t{});
    case DType::Bool: return fn(bool{});
  }
  internal_assert(false, "unknown dtype");
  return fn(float{});
}

// Same, restricted to floating dtypes; `op` names the caller in the error for other dtypes.
template <typename Fn>
decltype(auto) dispatch_floating(DType dtype, std::string_view op, Fn&& fn) {
  switch (dtype) {
    case DType::Float32: return fn(float{});
    case DType::Float64: return fn(double{});
    case DType::BFloat16: return fn(BFloat16{});
    case DType::Float16: return fn(Float16{});
    default: fail("{}: expected a floating-point tensor, got {}", op, dtype_name(dtype));
  }
}

}  // namespace ember

template <>
struct fmt::formatter<ember::DType> : fmt::formatter<std::string_view> {
  auto format(ember::DType dtype, fmt::format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(ember::dtype_name(dtype), ctx);
  }
};
