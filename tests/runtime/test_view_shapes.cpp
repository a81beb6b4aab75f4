// view() and reshape() on inputs that are not contiguous, as torch.Tensor.view documents: a view
// exists when the new shape only splits or merges dims laid out contiguously with each other, and
// reshape() returns that view (writes through it reach the input) instead of a copy. Checked
// against an exact oracle: the strides a view would need are the address steps between elements,
// and a view exists iff every element sits where those strides put it. Also the shape methods'
// error messages and t() of a tensor of fewer than 2 dims.
#include <doctest/doctest.h>

#include <optional>
#include <random>
#include <vector>

#include "runtime/ember.h"

namespace test_view_shapes {

using namespace ember;

namespace {

const TensorOptions kOnCpu{.dtype = kFloat64, .device = kCPU};

// The storage offset of each element of `tensor`, in row-major order of its sizes.
std::vector<int64_t> element_offsets(const Dims& sizes, const Dims& strides, int64_t offset) {
  std::vector<int64_t> offsets;
  const int64_t count = sizes.product();
  for (int64_t flat = 0; flat < count; ++flat) {
    int64_t rest = flat;
    int64_t at = offset;
    for (int d = sizes.size() - 1; d >= 0; --d) {
      at += rest % sizes[d] * strides[d];
      rest /= sizes[d];
    }
    offsets.push_back(at);
  }
  return offsets;
}

// The strides of a view of `tensor` with `shape`, or nullopt when no strides put every element in
// place. Dims of size 1 get stride 0 here (any stride serves them).
std::optional<Dims> oracle_strides(const Tensor& tensor, const Dims& shape) {
  const std::vector<int64_t> offsets = element_offsets(tensor.sizes(), tensor.strides(), 0);
  Dims strides = Dims::filled(shape.size(), 0);
  int64_t step = 1;  // row-major distance between consecutive indices of dim d
  for (int d = shape.size() - 1; d >= 0; --d) {
    if (shape[d] > 1) strides[d] = offsets[static_cast<size_t>(step)] - offsets[0];
    step *= shape[d];
  }
  if (element_offsets(shape, strides, offsets[0]) != offsets) return std::nullopt;
  return strides;
}

Dims sized_dims_only(const Tensor& tensor) {  // strides, with those of size-1 dims zeroed
  Dims strides = tensor.strides();
  for (int d = 0; d < tensor.dim(); ++d)
    if (tensor.size(d) == 1) strides[d] = 0;
  return strides;
}

}  // namespace

TEST_CASE("view: splits and merges of dims laid out together work on non-contiguous inputs") {
  const Tensor x = arange(0.0, 24.0, 1.0, kOnCpu).view({4, 6});
  struct Case {
    Tensor input;
    Dims shape;
    Dims strides;  // expected, size-1 dims zeroed
  };
  const std::vector<Case> cases{
      {x.t(), {6, 4, 1}, {1, 6, 0}},                             // a trailing dim of size 1
      {x.slice(1, 0, 4), {4, 2, 2}, {6, 2, 1}},                 // rows of a column slice split
      {x.slice(1, 0, 4), {2, 2, 4}, {12, 6, 1}},                // the row dim split
      {x.select(1, 0), {2, 2}, {12, 6}},                         // a strided column
      {x.slice(0, 0, 1).expand({3, 6}), {3, 2, 3}, {0, 3, 1}},  // an expanded dim kept
  };
  for (const Case& c : cases) {
    INFO("input ", c.input.sizes(), " strides ", c.input.strides(), " to ", c.shape);
    const Tensor viewed = c.input.view(c.shape);
    CHECK(sized_dims_only(viewed) == c.strides);
    CHECK(viewed.contiguous().to_vector<double>() == c.input.contiguous().to_vector<double>());
    CHECK(viewed.raw_data_ptr() == c.input.raw_data_ptr());  // no copy
  }
  CHECK_THROWS_WITH_AS(x.t().view({24}),
                       doctest::Contains("view: shape [24] is not compatible with the input's shape [6, 4] and "
                                         "strides [1, 6]"),
                       Error);
}

TEST_CASE("reshape: a view whenever strides allow one (writes reach the input), else a copy") {
  Tensor x = arange(0.0, 8.0, 1.0, kOnCpu).view({4, 2});
  Tensor column = x.select(1, 0).reshape({2, 2});  // stride 2 elements: a view
  column.fill_(-1.0);
  CHECK(x.to_vector<double>() == std::vector<double>{-1, 1, -1, 3, -1, 5, -1, 7});
  Tensor flat = x.t().reshape({-1});  // transposed: only a copy lists it in row-major order
  flat.fill_(9.0);
  CHECK(x.to_vector<double>() == std::vector<double>{-1, 1, -1, 3, -1, 5, -1, 7});
}

TEST_CASE("view: random view chains and shapes against the stride oracle") {
  std::mt19937 random(1234);
  auto pick = [&](int64_t bound) { return static_cast<int64_t>(random() % static_cast<uint32_t>(bound)); };
  const Tensor base = arange(0.0, 720.0, 1.0, kOnCpu);
  int viewed = 0, refused = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    // A random shape for the base, then random transposes, slices and size-1 insertions.
    const std::vector<Dims> shapes{{720}, {8, 90}, {6, 10, 12}, {2, 3, 4, 30}, {4, 5, 6, 6}};
    Tensor input = base.view(shapes[static_cast<size_t>(pick(5))]);
    for (int step = pick(4); step > 0; --step) {
      const int64_t dim = pick(input.dim());
      switch (pick(3)) {
        case 0: input = input.transpose(dim, pick(input.dim())); break;
        case 1: {
          const int64_t size = input.size(dim);
          const int64_t start = pick(size);
          input = input.slice(dim, start, start + 1 + pick(size - start), 1 + pick(2));
          break;
        }
        default: input = input.unsqueeze(dim); break;
      }
    }
    // A target shape: the element count factored into up to four dims, with size-1 dims mixed in.
    Dims shape;
    int64_t rest = input.numel();
    while (rest > 1 && shape.size() < 4) {
      int64_t factor = 1 + pick(std::min<int64_t>(rest, 12));
      while (rest % factor != 0) --factor;
      if (factor == 1) factor = rest;
      shape.push_back(factor);
      rest /= factor;
      if (pick(4) == 0) shape.push_back(1);
    }
    if (rest > 1) shape.push_back(rest);
    INFO("input ", input.sizes(), " strides ", input.strides(), " to ", shape);
    const std::optional<Dims> expected = oracle_strides(input, shape);
    if (expected) {
      const Tensor result = input.view(shape);
      CHECK(sized_dims_only(result) == *expected);
      CHECK(result.contiguous().to_vector<double>() == input.contiguous().to_vector<double>());
      ++viewed;
    } else {
      CHECK_THROWS_AS(input.view(shape), Error);
      CHECK(input.reshape(shape).contiguous().to_vector<double>() == input.contiguous().to_vector<double>());
      ++refused;
    }
  }
  CHECK(viewed > 200);  // both outcomes are exercised
  CHECK(refused > 200);
}

TEST_CASE("shape methods name themselves in their errors") {
  const Tensor x = zeros({2, 3}, kOnCpu);
  CHECK_THROWS_WITH_AS(x.narrow(2, 0, 1), doctest::Contains("narrow: dim 2 is out of range for a tensor of rank 2"),
                       Error);
  CHECK_THROWS_WITH_AS(x.select(-3, 0), doctest::Contains("select: dim -3 is out of range for a tensor of rank 2"),
                       Error);
  const Tensor scalar = scalar_tensor(5.0, kOnCpu);
  CHECK_THROWS_WITH_AS(scalar.flatten(5, 7), doctest::Contains("flatten: dim 5 is out of range"), Error);
  CHECK_THROWS_WITH_AS(scalar.flatten(1, 0), doctest::Contains("flatten: dim 1 is out of range"), Error);
  CHECK(scalar.flatten(0, -1).sizes() == Dims{1});
  CHECK_THROWS_WITH_AS(zeros({0}, kOnCpu).view({0, int64_t{1} << 62, 4}),
                       doctest::Contains("view: shape [0, 4611686018427387904, 4] has strides past"), Error);
  CHECK_THROWS_WITH_AS(zeros({0}, kOnCpu).reshape({0, int64_t{1} << 62, 4}),
                       doctest::Contains("reshape: shape [0, 4611686018427387904, 4] has strides past"), Error);
}

TEST_CASE("t() of a tensor of fewer than 2 dims is a view of it, not the same tensor") {
  for (const Tensor& input : {scalar_tensor(2.0, kOnCpu), arange(0.0, 3.0, 1.0, kOnCpu)}) {
    INFO("input of shape ", input.sizes());
    Tensor transposed = input.t();
    CHECK(!transposed.is_same(input));
    CHECK(transposed.sizes() == input.sizes());
    CHECK(transposed.raw_data_ptr() == input.raw_data_ptr());
    transposed.requires_grad_();
    CHECK(!input.requires_grad());
  }
}

}  // namespace test_view_shapes
