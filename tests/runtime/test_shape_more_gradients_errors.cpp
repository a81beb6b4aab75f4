// Gradients by central differences and the errors of runtime/functional_shape_more.h's functions
// (their values: test_shape_more.cpp): each error names the function, the values and the caller's
// line.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <source_location>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "runtime/ember.h"

namespace test_shape_more_gradients_errors {

using namespace ember;
using ember::testing::check_refusal;
using ember::testing::error_of;
using ember::testing::gradcheck_leaves;
using ember::testing::leaf;
using ember::testing::names_line;
using ember::testing::small_tensor;
using ember::testing::values_of;

TEST_CASE("shape_more: gradients by central differences") {
  using Inputs = std::vector<Tensor>;
  gradcheck_leaves([](const Inputs& in) { return movedim(in[0], {0, 2}, {2, 0}).exp(); }, {leaf({2, 3, 2}, 1)});
  gradcheck_leaves([](const Inputs& in) { return swapaxes(in[0], 0, 1).mul(in[0].t()); }, {leaf({2, 3}, 2)});
  gradcheck_leaves([](const Inputs& in) { return narrow(in[0], 1, -3, 2).tanh(); }, {leaf({2, 4}, 3)});
  gradcheck_leaves([](const Inputs& in) { return unflatten(in[0].t(), 0, {2, -1}).exp(); }, {leaf({3, 4}, 4)});
  gradcheck_leaves([](const Inputs& in) { return tile(in[0], {2, 1, 3}).exp(); }, {leaf({2, 2}, 5)});
  gradcheck_leaves([](const Inputs& in) { return diag(in[0], 1).exp(); }, {leaf({3}, 6)});
  gradcheck_leaves([](const Inputs& in) { return diag(in[0], -2).exp(); }, {leaf({3}, 7)});
  gradcheck_leaves([](const Inputs& in) { return diag(in[0].t(), 1).exp(); }, {leaf({4, 3}, 8)});
  gradcheck_leaves([](const Inputs& in) { return diag_embed(in[0], -1, 0, 2).exp(); }, {leaf({2, 3}, 9)});
  gradcheck_leaves([](const Inputs& in) { return diagflat(in[0], 1).exp(); }, {leaf({2, 2}, 10)});
  gradcheck_leaves([](const Inputs& in) { return trace(in[0].mul(in[0])); }, {leaf({3, 4}, 11)});
  gradcheck_leaves([](const Inputs& in) { return kron(in[0], in[1]); }, {leaf({2, 3}, 12), leaf({2, 1}, 13)});
  gradcheck_leaves([](const Inputs& in) { return kron(in[0], in[1]); },
                   {leaf({1, 2, 1, 1, 2}, 14), leaf({2, 1, 2}, 15)});
  gradcheck_leaves([](const Inputs& in) { return linalg_cross(in[0], in[1], 0); },
                   {leaf({3, 2}, 16), leaf({3, 1}, 17)});
  gradcheck_leaves([](const Inputs& in) { return outer(in[0], in[1]).exp(); }, {leaf({3}, 18), leaf({2}, 19)});
  gradcheck_leaves([](const Inputs& in) { return dot(in[0], in[1].t().reshape({-1})); },
                   {leaf({4}, 22), leaf({2, 2}, 23)});
  gradcheck_leaves(
      [](const Inputs& in) {
        const std::vector<Tensor> grids = meshgrid({in[0], in[1]}, "xy");
        return grids[0].mul(grids[1].exp());
      },
      {leaf({3}, 20), leaf({2}, 21)});
}

TEST_CASE("shape_more: errors name the function, the values and the caller's line") {
  const Tensor t = small_tensor({2, 3, 4}, 30);
  const Tensor v = small_tensor({3}, 31);
  const Tensor huge = zeros({1, 1});  // expanded to shapes whose kron has more elements than an int64 counts
  std::string message;
  int line = __LINE__ + 1;
  message = error_of([&] { movedim(t, {0, 1}, {0}); });
  check_refusal(message,
                "movedim: Invalid source or destination dims: source ([0, 1] dims) should contain the same number of "
                "dims as destination ([0] dims)",
                line);
  line = __LINE__ + 1;
  message = error_of([&] { t.movedim(Dims{0, -3}, Dims{1, 2}); });
  check_refusal(message, "movedim: repeated dim in `source` ([0, -3]), moving source [0, -3] to destination [1, 2]",
                line);
  line = __LINE__ + 1;
  message = error_of([&] { moveaxis(t, {0, 2}, {1, 1}); });
  check_refusal(message, "movedim: repeated dim in `destination` ([1, 1])", line);
  line = __LINE__ + 1;
  message = error_of([&] { movedim(t, 3, 0); });
  check_refusal(message, "movedim: dim 3 is out of range for a tensor of rank 3", line);
  line = __LINE__ + 1;
  message = error_of([&] { t.moveaxis(0, -4); });
  check_refusal(message, "movedim: dim -4 is out of range for a tensor of rank 3", line);
  line = __LINE__ + 1;
  message = error_of([&] { swapaxes(t, 0, 3); });
  check_refusal(message, "swapaxes: dim 3 is out of range for a tensor of rank 3", line);
  line = __LINE__ + 1;
  message = error_of([&] { t.swapdims(-4, 0); });
  check_refusal(message, "swapdims: dim -4 is out of range for a tensor of rank 3", line);
  line = __LINE__ + 1;
  message = error_of([&] { tile(huge, {int64_t{1} << 40, int64_t{1} << 40}); });
  check_refusal(message,
                "tile: the input of shape [1, 1] tiled [1099511627776, 1099511627776] times would have more "
                "elements than an int64 counts",
                line);
  line = __LINE__ + 1;
  message = error_of([&] { narrow(t, 1, 4, 1); });
  check_refusal(message, "narrow: start 4 and length 1 are out of range for dim 1 of size 3", line);
  line = __LINE__ + 1;
  message = error_of([&] { narrow(t, 1, -4, 1); });
  check_refusal(message, "narrow: start -4 and length 1 are out of range for dim 1 of size 3", line);
  line = __LINE__ + 1;
  message = error_of([&] { narrow(t, -2, 1, 3); });
  check_refusal(message, "narrow: start 1 and length 3 are out of range for dim -2 of size 3", line);
  line = __LINE__ + 1;
  message = error_of([&] { narrow(t, 0, 0, -1); });
  check_refusal(message, "narrow: length must be non-negative, got -1", line);
  line = __LINE__ + 1;
  message = error_of([&] { unflatten(t, 1, {}); });
  check_refusal(message, "unflatten: sizes must be non-empty (dim 1, input shape [2, 3, 4])", line);
  line = __LINE__ + 1;
  message = error_of([&] { t.unflatten(2, {3, 2}); });
  check_refusal(message, "unflatten: Provided sizes [3, 2] don't multiply up to the size of dim 2 (4)", line);
  line = __LINE__ + 1;
  message = error_of([&] { unflatten(t, -1, {-1, 3}); });
  check_refusal(
      message,
      "unflatten: Provided sizes [-1, 3] don't multiply up to the size of dim -1 (4) in the input tensor [2, 3, 4]",
      line);
  line = __LINE__ + 1;
  message = error_of([&] { unflatten(t, 2, {-1, -1}); });
  check_refusal(message, "unflatten: only one dimension can be inferred, got sizes [-1, -1]", line);
  line = __LINE__ + 1;
  message = error_of([&] { unflatten(t, 2, {-2, -2}); });
  check_refusal(message, "unflatten: invalid size -2 in sizes [-2, -2]", line);
  line = __LINE__ + 1;
  message = error_of([&] { unflatten(zeros({2, 0}), 1, {0, -1}); });
  check_refusal(message, "unflatten: cannot infer the -1 in sizes [0, -1]", line);
  line = __LINE__ + 1;
  message = error_of([&] { unflatten(scalar_tensor(1.0), 0, {1}); });
  check_refusal(message, "unflatten: cannot unflatten a 0-d tensor (dim 0, sizes [1])", line);
  line = __LINE__ + 1;
  message = error_of([&] { unflatten(t, 3, {1}); });
  check_refusal(message, "unflatten: dim 3 is out of range for a tensor of rank 3", line);
  line = __LINE__ + 1;
  message = error_of([&] { unflatten(t, 0, {1, 1, 1, 1, 1, 1, 2}); });
  check_refusal(message, "unflatten: the result would have 9 dims", line);
  line = __LINE__ + 1;
  message = error_of([&] { meshgrid({}); });
  check_refusal(message, "meshgrid expects a non-empty TensorList", line);
  line = __LINE__ + 1;
  message = error_of([&] { meshgrid({v}, "ji"); });
  check_refusal(message, "meshgrid: indexing must be one of \"xy\" or \"ij\", but received: ji", line);
  line = __LINE__ + 1;
  message = error_of([&] { meshgrid({v, t}); });
  check_refusal(message, "meshgrid: Expected 0D or 1D tensor in the tensor list but got tensor 1 of shape [2, 3, 4]",
                line);
  line = __LINE__ + 1;
  message = error_of([&] { meshgrid({v, from_vector<int64_t>({1}, {1})}); });
  check_refusal(message, "meshgrid expects all tensors to have the same dtype: tensor 0 is float64, tensor 1 is int64",
                line);
  line = __LINE__ + 1;
  message = error_of([&] { meshgrid(std::vector<Tensor>(9, v)); });
  check_refusal(message, "meshgrid: 9 tensors would make results of 9 dims", line);
  line = __LINE__ + 1;
  message = error_of([&] { tile(t, {2, -1}); });
  check_refusal(message, "tile: reps must be non-negative, got [2, -1] (shape [2, 3, 4])", line);
  line = __LINE__ + 1;
  message = error_of([&] { diag(t); });
  check_refusal(message, "diag: Supports 1D or 2D tensors. Got 3D (shape [2, 3, 4])", line);
  line = __LINE__ + 1;
  message = error_of([&] { scalar_tensor(1.0).diag(); });
  check_refusal(message, "diag: Supports 1D or 2D tensors. Got 0D (shape [])", line);
  line = __LINE__ + 1;
  message = error_of([&] { diag_embed(scalar_tensor(1.0), 1); });
  check_refusal(message, "diag_embed: expected a tensor of at least 1 dim, got a 0-d tensor (offset 1)", line);
  line = __LINE__ + 1;
  message = error_of([&] { diag_embed(zeros({3}), 0, 0, -2); });
  check_refusal(message, "diag_embed: diagonal dimensions cannot be identical: dim1 0 and dim2 -2 (input shape [3])",
                line);
  line = __LINE__ + 1;
  message = error_of([&] { t.diag_embed(0, 4, 0); });
  check_refusal(message, "diag_embed: dim 4 is out of range for a tensor of rank 4", line);
  line = __LINE__ + 1;
  message = error_of([&] { diag_embed(zeros({1, 1, 1, 1, 1, 1, 1, 1})); });
  check_refusal(message, "diag_embed: the result would have 9 dims (input shape [1, 1, 1, 1, 1, 1, 1, 1])", line);
  line = __LINE__ + 1;
  message = error_of([&] { trace(v); });
  check_refusal(message, "trace: expected a matrix, but got a tensor with 1 dims (shape [3])", line);
  line = __LINE__ + 1;
  message = error_of([&] { eye(-1, 2); });
  check_refusal(message, "eye: n must be greater or equal to 0, got -1 (m 2)", line);
  line = __LINE__ + 1;
  message = error_of([&] { eye(2, -3); });
  check_refusal(message, "eye: m must be greater or equal to 0, got -3 (n 2)", line);
  line = __LINE__ + 1;
  message = error_of([&] { eye(-2); });
  check_refusal(message, "eye: n must be greater or equal to 0, got -2 (m -2)", line);
  line = __LINE__ + 1;
  message = error_of([&] { kron(huge.expand({int64_t{1} << 40, 1 << 20}), huge.expand({1 << 20, 1 << 20})); });
  check_refusal(message,
                "kron: the result (shapes [1099511627776, 1048576] and [1048576, 1048576]) would have more elements "
                "than an int64 counts",
                line);
  line = __LINE__ + 1;
  message = error_of([&] { linalg_cross(v, t); });
  check_refusal(message, "linalg_cross: inputs must have the same number of dimensions, got shapes [3] and [2, 3, 4]",
                line);
  line = __LINE__ + 1;
  message = error_of([&] { linalg_cross(t, t); });
  check_refusal(message,
                "linalg_cross: inputs dimension -1 must have length 3. Got 4 and 4 (shapes [2, 3, 4] and [2, 3, 4])",
                line);
  line = __LINE__ + 1;
  message = error_of([&] { t.cross(zeros({2, 1, 4}, {.dtype = kFloat64}), 1); });
  check_refusal(message, "cross: inputs dimension 1 must have length 3. Got 3 and 1", line);
  line = __LINE__ + 1;
  message = error_of([&] { cross(t, t, 3); });
  check_refusal(message, "cross: dim 3 is out of range for a tensor of rank 3", line);
  line = __LINE__ + 1;
  message = error_of([&] { cross(v, zeros({3}), 0); });
  check_refusal(message, "cross: expected inputs of one dtype, got float64 and float32", line);
  line = __LINE__ + 1;
  message = error_of([&] { linalg_cross(zeros({3}, {.dtype = kBool}), zeros({3}, {.dtype = kBool})); });
  check_refusal(message, "linalg_cross: bool inputs are not supported", line);
  line = __LINE__ + 1;
  message = error_of([&] { linalg_cross(scalar_tensor(1.0), scalar_tensor(1.0)); });
  check_refusal(message, "linalg_cross: inputs must have at least 1 dim, got 0-d tensors (dim -1)", line);
  line = __LINE__ + 1;
  message = error_of([&] { outer(v, t); });
  check_refusal(message, "outer: expected two 1-D tensors, got shapes [3] and [2, 3, 4]", line);
  line = __LINE__ + 1;
  message = error_of([&] { ger(scalar_tensor(1.0), v); });
  check_refusal(message, "ger: expected two 1-D tensors, got shapes [] and [3]", line);
  line = __LINE__ + 1;
  message = error_of([&] { dot(v, t); });
  check_refusal(message, "dot: 1D tensors expected, but got 1D and 3D tensors (shapes [3] and [2, 3, 4])", line);
  line = __LINE__ + 1;
  message = error_of([&] { vdot(v, small_tensor({2}, 33)); });
  check_refusal(message, "vdot: inconsistent tensor size, expected tensors of the same number of elements, got 3 and 2",
                line);
  line = __LINE__ + 1;
  message = error_of([&] { v.dot(zeros({3})); });
  check_refusal(message, "dot: expected both vectors to have same dtype, but found float64 and float32", line);
  line = __LINE__ + 1;
  message = error_of([&] { dot(zeros({3}, {.dtype = kBool}), zeros({3}, {.dtype = kBool})); });
  check_refusal(message, "dot: bool inputs are not supported", line);
}

}  // namespace test_shape_more_gradients_errors
