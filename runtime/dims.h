// Dims: a tensor's sizes or strides, stored inline (no heap) because every op creates some.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/error.h"

namespace ember {

class Dims {
 public:
  static constexpr int kMaxRank = 8;

  Dims() = default;
  // A shape the user writes ({2, 3}) is converted before the op's call-site scope opens, so a shape
  // past kMaxRank names the line that wrote it here.
  Dims(std::initializer_list<int64_t> values,  // NOLINT
       const std::source_location& where = std::source_location::current()) {
    assign(values.begin(), values.size(), where);
  }
  Dims(std::span<const int64_t> values,  // NOLINT
       const std::source_location& where = std::source_location::current()) {
    assign(values.data(), values.size(), where);
  }
  Dims(const std::vector<int64_t>& values,  // NOLINT
       const std::source_location& where = std::source_location::current()) {
    assign(values.data(), values.size(), where);
  }
  static Dims filled(int rank, int64_t value) {
    Dims dims;
    dims.resize(rank, value);
    return dims;
  }

  int size() const { return rank_; }
  bool empty() const { return rank_ == 0; }
  int64_t operator[](int i) const { return values_[i]; }
  int64_t& operator[](int i) { return values_[i]; }
  const int64_t* begin() const { return values_.data(); }
  const int64_t* end() const { return values_.data() + rank_; }
  int64_t* begin() { return values_.data(); }
  int64_t* end() { return values_.data() + rank_; }
  const int64_t* data() const { return values_.data(); }
  int64_t back() const { return values_[rank_ - 1]; }

  void push_back(int64_t value) {
    if (rank_ >= kMaxRank) [[unlikely]] fail_no_room_for_dim();  // out of line: the message formats the shape
    values_[rank_++] = value;
  }
  void insert(int position, int64_t value) {
    push_back(0);
    for (int i = rank_ - 1; i > position; --i) values_[i] = values_[i - 1];
    values_[position] = value;
  }
  void erase(int position) {
    for (int i = position; i + 1 < rank_; ++i) values_[i] = values_[i + 1];
    --rank_;
  }
  void resize(int rank, int64_t value = 0) {
    check(rank >= 0 && rank <= kMaxRank, "a shape of {} dims was asked for: ember tensors have at most {} dimensions",
          rank, kMaxRank);
    for (int i = rank_; i < rank; ++i) values_[i] = value;
    rank_ = rank;
  }

  // The element count, or nullopt when it does not fit in an int64 (any 0 dim makes it 0,
  // whatever the others are).
  std::optional<int64_t> checked_product() const {
    int64_t result = 1;
    bool overflowed = false;
    for (int i = 0; i < rank_; ++i) {
      if (values_[i] == 0) return 0;
      overflowed = __builtin_mul_overflow(result, values_[i], &result) || overflowed;
    }
    if (overflowed) return std::nullopt;
    return result;
  }
  // The element count; a count past int64 is an Error (byte sizes and indices are computed from
  // it, so a wrapped count would corrupt memory).
  int64_t product() const {
    const std::optional<int64_t> count = checked_product();
    if (!count) [[unlikely]] fail_too_many_elements();
    return *count;
  }
  std::vector<int64_t> vec() const { return {begin(), end()}; }
  std::string str() const;  // "[32, 100]"

  friend bool operator==(const Dims& a, const Dims& b) {
    return a.rank_ == b.rank_ && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  [[noreturn]] void fail_too_many_elements() const;
  [[noreturn]] static void fail_too_many_dims(size_t count, const std::source_location& where);
  [[noreturn]] void fail_no_room_for_dim() const;
  void assign(const int64_t* values, size_t count, const std::source_location& where) {
    if (count > kMaxRank) [[unlikely]] fail_too_many_dims(count, where);
    rank_ = static_cast<int>(count);
    std::copy(values, values + count, values_.begin());
  }

  std::array<int64_t, kMaxRank> values_{};
  int rank_ = 0;
};

// Contiguous (row-major) strides for `sizes`; `op` names the caller when they overflow an int64.
Dims contiguous_strides(const Dims& sizes, std::string_view op);

// The strides that show the elements of a tensor of `sizes` and `strides`, in row-major order,
// as the shape `shape` (same element count) without copying; nullopt when none can, because a dim
// of `shape` would span parts of the input that are not evenly spaced in memory. As
// torch.Tensor.view: a dim may be split or merged only with neighbours laid out contiguously
// with it (a transposed matrix flattens only by copying; a slice of rows reshapes freely).
std::optional<Dims> view_strides(const Dims& sizes, const Dims& strides, const Dims& shape, std::string_view op);

// Wraps a possibly negative dim into [0, rank); `op` names the caller in the error.
int wrap_dim(int64_t dim, int rank, std::string_view op);
// The same for where a new dim goes (unsqueeze, stack): [-(rank + 1), rank] into [0, rank]; the
// tensor must have room for one more dim.

int wrap_insert_dim(int64_t dim, int rank, std::string_view op);
// An op whose result has one dim more than `sizes` (embedding, one_hot) checks the limit with this.
void check_room_for_dim(const Dims& sizes, std::string_view op);

// NumPy broadcasting of two shapes; `op` names the caller in the error.
Dims broadcast_shapes(const Dims& a, const Dims& b, std::string_view op);

}  // namespace ember

template <>
struct fmt::formatter<ember::Dims> : fmt::formatter<std::string_view> {
  auto format(const ember::Dims& dims, fmt::format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(dims.str(), ctx);
  }
};
