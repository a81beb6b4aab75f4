// Bad input to the composites of runtime/functional_index_more.h: each error names the function,
// the values at fault and the caller's line.
#include <doctest/doctest.h>

#include <vector>

#include "error_of.h"
#include "runtime/ember.h"
#include "runtime/functional_index_more.h"

namespace test_index_more_errors {

using namespace ember;
using namespace ember::testing;

namespace {

Tensor longs(const std::vector<int64_t>& values) {
  return from_vector<int64_t>(values, Dims{static_cast<int64_t>(values.size())}, {.dtype = kInt64});
}

// Runs body, which sets `line` to the line of the call it makes, and checks the error names
// `expected` and that line.
int line = 0;
template <typename Body>
void refused(Body&& body, std::string_view expected) {
  const std::string message = error_of(body);
  check_refusal(message, expected, line);
}

}  // namespace

TEST_CASE("index_more errors: broadcasting names both shapes") {
  const Tensor a = zeros({2, 3});
  refused(
      [&] {
        line = __LINE__ + 1;
        broadcast_to(a, {4, 2});
      },
      "broadcast_to: the expanded size of the tensor (4) must match the existing size (2) at non-singleton dim 0");
  refused(
      [&] {
        line = __LINE__ + 1;
        broadcast_tensors({a, zeros({4}), zeros({3})});
      },
      "shape [2, 3] (argument 0) and shape [4] (argument 1)");
  refused(
      [&] {
        line = __LINE__ + 1;
        broadcast_shapes(std::vector<Dims>{{2}, {-1}});
      },
      "broadcast_shapes: shape [-1] (argument 1) has a negative size");
}

TEST_CASE("index_more errors: indices out of range name the index and the size") {
  const Tensor a = zeros({2, 3});
  refused(
      [&] {
        line = __LINE__ + 1;
        take(a, longs({6}));
      },
      "take: index 6 is out of range for the input's elements of size 6");
  refused(
      [&] {
        line = __LINE__ + 1;
        take(a, longs({-7}));
      },
      "take: index -7 is out of range");
  refused(
      [&] {
        line = __LINE__ + 1;
        take(a, zeros({1}, {.dtype = kInt32}));
      },
      "take: expected an index of dtype int64, got int32");
  refused(
      [&] {
        line = __LINE__ + 1;
        put(a, longs({1, 2}), zeros({3}));
      },
      "put: expected source and index to have the same number of elements, got 3");
  refused(
      [&] {
        line = __LINE__ + 1;
        put(a, longs({9}), zeros({1}));
      },
      "put: index 9 is out of range for the input's elements of size 6");
  refused(
      [&] {
        line = __LINE__ + 1;
        index_fill(a, 1, longs({3}), 1.0);
      },
      "index_fill: index 3 is out of range for dim 1 of size 3");
  refused(
      [&] {
        line = __LINE__ + 1;
        index_copy(a, 0, longs({0}), zeros({2, 3}));
      },
      "index_copy: source of shape [2, 3] must match self's shape [2, 3] except at dim 0, where it must be "
      "the index length 1");
  refused(
      [&] {
        line = __LINE__ + 1;
        take_along_dim(a, longs({0}), 0);
      },
      "take_along_dim: the input and indices should have the same number of dims, got shapes [2, 3] and [1]");
  refused(
      [&] {
        line = __LINE__ + 1;
        unravel_index(longs({1}), {2, -1});
      },
      "unravel_index: 'shape' cannot have negative values, got [2, -1]");
  refused(
      [&] {
        line = __LINE__ + 1;
        unravel_index(zeros({1}), {2});
      },
      "unravel_index: expected 'indices' to be of an integer dtype, got float32");
  refused(
      [&] {
        line = __LINE__ + 1;
        unravel_index(longs({1}), {int64_t{1} << 31, int64_t{1} << 31, 4});
      },
      "unravel_index: 'shape' [2147483648, 2147483648, 4] holds more than 2^53 elements");
  Tensor grad_leaf = zeros({2, 3}).requires_grad_();
  refused(
      [&] {
        line = __LINE__ + 1;
        index_fill_(grad_leaf, 0, longs({0}), 1.0);
      },
      "index_fill_: a leaf tensor that requires grad");
}

TEST_CASE("index_more errors: masked_scatter and the scatters name the expected and given shapes") {
  const Tensor a = zeros({2, 3});
  const Tensor mask = ones({2, 3}, {.dtype = kBool});
  refused(
      [&] {
        line = __LINE__ + 1;
        masked_scatter(a, mask, zeros({5}));
      },
      "masked_scatter: the mask has 6 true elements but source has only 5");
  refused(
      [&] {
        line = __LINE__ + 1;
        masked_scatter(a, zeros({2, 3}), zeros({6}));
      },
      "masked_scatter: expected a bool mask, got float32");
  refused(
      [&] {
        line = __LINE__ + 1;
        select_scatter(a, zeros({2}), 0, 0);
      },
      "select_scatter: expected src to have the shape [3] of the embedded view of the input [2, 3], got [2]");
  refused(
      [&] {
        line = __LINE__ + 1;
        select_scatter(a, zeros({3}), 0, 2);
      },
      "select_scatter: index 2 is out of range for dim 0 of size 2");
  refused(
      [&] {
        line = __LINE__ + 1;
        slice_scatter(a, zeros({2, 3}), 1, 0, 2);
      },
      "slice_scatter: expected src to have the shape [2, 2] of the embedded view of the input [2, 3], got [2, 3]");
  refused(
      [&] {
        line = __LINE__ + 1;
        slice_scatter(a, zeros({2, 3}), 1, 0, 2, 0);
      },
      "slice_scatter: slice step must be positive, got 0");
  refused(
      [&] {
        line = __LINE__ + 1;
        diagonal_scatter(a, zeros({3}), 0);
      },
      "diagonal_scatter: expected src to have the shape [2] of the embedded view of the input [2, 3], got [3]");
}

}  // namespace test_index_more_errors
