// atleast_1d/2d/3d, hstack, vstack, dstack, column_stack, tensor_split, hsplit, vsplit, dsplit and
// msort (runtime/functional_arrange.h): shapes and values against index loops, views sharing the
// input's storage, empty pieces, and errors naming the function, the values and the caller's line.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "runtime/ember.h"

namespace test_ops_composites_stack_split {

using namespace ember;
using ember::testing::check_refusal;
using ember::testing::error_of;
using ember::testing::gradcheck_leaves;
using ember::testing::leaf;
using ember::testing::small_tensor;
using ember::testing::values_of;

namespace {

std::vector<Dims> shapes_of(const std::vector<Tensor>& pieces) {
  std::vector<Dims> shapes;
  for (const Tensor& piece : pieces) shapes.push_back(piece.sizes());
  return shapes;
}

// The elements [start, end) of dim 1 of a row-major [rows, cols] matrix, by a loop.
std::vector<double> columns_of(const std::vector<double>& a, int64_t rows, int64_t cols, int64_t start, int64_t end) {
  std::vector<double> result;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = start; j < end; ++j) result.push_back(a[i * cols + j]);
  return result;
}

}  // namespace

TEST_CASE("atleast_nd: shapes as torch's, the input itself when it has the dims") {
  const Tensor s = scalar_tensor(2.0), v = small_tensor({3}, 1), m = small_tensor({2, 3}, 2);
  const Tensor c = small_tensor({2, 3, 4}, 3);
  CHECK(atleast_1d(s).sizes() == Dims{1});
  CHECK(atleast_2d(s).sizes() == Dims{1, 1});
  CHECK(atleast_3d(s).sizes() == Dims{1, 1, 1});
  CHECK(atleast_2d(v).sizes() == Dims{1, 3});
  CHECK(atleast_3d(v).sizes() == Dims{1, 3, 1});
  CHECK(atleast_3d(m).sizes() == Dims{2, 3, 1});
  CHECK(atleast_1d(v).is_same(v));
  CHECK(atleast_3d(c).is_same(c));
  CHECK(values_of(atleast_3d(m)) == values_of(m));
  const std::vector<Tensor> all = atleast_2d(std::vector<Tensor>{s, v, c});
  CHECK(shapes_of(all) == std::vector<Dims>{{1, 1}, {1, 3}, {2, 3, 4}});
}

TEST_CASE("hstack, vstack, dstack, column_stack: values by index loops") {
  const Tensor a = small_tensor({2, 3}, 4), b = small_tensor({2, 1}, 5);
  const std::vector<double> av = values_of(a), bv = values_of(b);
  std::vector<double> expected;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) expected.push_back(av[i * 3 + j]);
    expected.push_back(bv[i]);
  }
  CHECK(hstack({a, b}).sizes() == Dims{2, 4});
  CHECK(values_of(hstack({a, b})) == expected);
  CHECK(values_of(column_stack({a, b.reshape({2})})) == expected);  // a 1-D input becomes a column
  const Tensor u = small_tensor({3}, 6), w = small_tensor({2}, 7);
  std::vector<double> joined = values_of(u);
  for (double value : values_of(w)) joined.push_back(value);
  CHECK(values_of(hstack({u, w})) == joined);  // 1-D inputs join along dim 0
  const Tensor vertical = vstack({u, a});
  CHECK(vertical.sizes() == Dims{3, 3});
  std::vector<double> vertical_expected = values_of(u);
  for (double value : av) vertical_expected.push_back(value);
  CHECK(values_of(vertical) == vertical_expected);
  const Tensor depth = dstack({a, a.mul(2.0)});
  CHECK(depth.sizes() == Dims{2, 3, 2});
  for (int k = 0; k < 6; ++k) {
    CHECK(values_of(depth)[2 * k] == av[k]);
    CHECK(values_of(depth)[2 * k + 1] == 2.0 * av[k]);
  }
  CHECK(column_stack({scalar_tensor(1.0), scalar_tensor(2.0)}).sizes() == Dims{1, 2});
  CHECK(hstack({ones({2}, {.dtype = kInt32}), ones({1}, {.dtype = kFloat64})}).dtype() == kFloat64);
  gradcheck_leaves(
      [](const std::vector<Tensor>& in) {
        return dstack({in[0], in[1].exp()});
      },
      {leaf({2, 2}, 8), leaf({2, 2}, 9)});
  gradcheck_leaves(
      [](const std::vector<Tensor>& in) {
        return column_stack({in[0], in[1]}).exp();
      },
      {leaf({3}, 10), leaf({3, 2}, 11)});
}

TEST_CASE("tensor_split: sections of torch's sizes, indices as slice bounds, views") {
  const Tensor a = small_tensor({3, 7}, 12);
  const std::vector<double> av = values_of(a);
  for (int64_t sections = 1; sections <= 9; ++sections) {
    INFO((std::string("sections ") + std::to_string(sections)));
    const std::vector<Tensor> pieces = tensor_split(a, sections, 1);
    REQUIRE(static_cast<int64_t>(pieces.size()) == sections);
    int64_t start = 0;
    for (int64_t i = 0; i < sections; ++i) {
      const int64_t length = 7 / sections + (i < 7 % sections ? 1 : 0);
      CHECK(pieces[i].sizes() == Dims{3, length});
      CHECK(values_of(pieces[i]) == columns_of(av, 3, 7, start, start + length));
      start += length;
    }
  }
  // Python slice bounds: -2 is 5, 9 clamps to 7, a decreasing pair gives an empty piece.
  const std::vector<Tensor> pieces = tensor_split(a, std::vector<int64_t>{2, -2, 1, 9}, -1);
  CHECK(shapes_of(pieces) == std::vector<Dims>{{3, 2}, {3, 3}, {3, 0}, {3, 6}, {3, 0}});
  CHECK(values_of(pieces[1]) == columns_of(av, 3, 7, 2, 5));
  CHECK(values_of(pieces[3]) == columns_of(av, 3, 7, 1, 7));
  CHECK(tensor_split(a, std::vector<int64_t>{}, 0).size() == 1);
  // Views: a write shows in the input.
  Tensor b = small_tensor({4}, 13);
  tensor_split(b, 2)[1].fill_(5.0);
  CHECK(values_of(b)[3] == 5.0);
  CHECK(shapes_of(tensor_split(zeros({0, 2}), 3)) == std::vector<Dims>{{0, 2}, {0, 2}, {0, 2}});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return tensor_split(in[0], 3, 1)[0].exp(); },
                   {leaf({2, 5}, 14)});
}

TEST_CASE("hsplit, vsplit, dsplit: their dims, divisibility and indices") {
  const Tensor c = small_tensor({4, 6, 2}, 15);
  CHECK(shapes_of(hsplit(c, 3)) == std::vector<Dims>{{4, 2, 2}, {4, 2, 2}, {4, 2, 2}});
  CHECK(shapes_of(vsplit(c, 2)) == std::vector<Dims>{{2, 6, 2}, {2, 6, 2}});
  CHECK(shapes_of(dsplit(c, 2)) == std::vector<Dims>{{4, 6, 1}, {4, 6, 1}});
  CHECK(shapes_of(hsplit(small_tensor({6}, 16), 2)) == std::vector<Dims>{{3}, {3}});  // 1-D: dim 0
  CHECK(shapes_of(vsplit(c, std::vector<int64_t>{1, 3})) == std::vector<Dims>{{1, 6, 2}, {2, 6, 2}, {1, 6, 2}});
  CHECK(values_of(dsplit(c, std::vector<int64_t>{1})[1]) == values_of(c.select(2, 1)));
}

TEST_CASE("msort: sort along dim 0, NaN last") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor a = from_vector<double>({3.0, nan, -1.0, 2.0, 0.5, 7.0}, {3, 2}, {.dtype = kFloat64});
  const std::vector<double> got = values_of(msort(a));
  // Columns (3, -1, 0.5) and (NaN, 2, 7) sorted each: rows (-1, 2), (0.5, 7), (3, NaN).
  CHECK(got[0] == -1.0);
  CHECK(got[1] == 2.0);
  CHECK(got[2] == 0.5);
  CHECK(got[3] == 7.0);
  CHECK(got[4] == 3.0);
  CHECK(std::isnan(got[5]));
  gradcheck_leaves([](const std::vector<Tensor>& in) { return msort(in[0]).exp(); }, {leaf({3, 2}, 17)});
}

TEST_CASE("stack and split composites: errors name the function, the values and the caller's line") {
  const Tensor c = small_tensor({4, 6, 2}, 18), v = small_tensor({5}, 19);
  int line = __LINE__ + 1;
  std::string message = error_of([&] { hstack({}); });
  check_refusal(message, "hstack: expects a non-empty TensorList", line);
  line = __LINE__ + 1;
  message = error_of([&] { vstack({}); });
  check_refusal(message, "vstack: expects a non-empty TensorList", line);
  line = __LINE__ + 1;
  message = error_of([&] { tensor_split(v, 0); });
  check_refusal(message, "tensor_split: number of sections must be larger than 0, got 0", line);
  line = __LINE__ + 1;
  message = error_of([&] { tensor_split(scalar_tensor(1.0), 2); });
  check_refusal(message, "tensor_split: expected at least a 1-dimensional tensor, but got a tensor with 0 dims", line);
  line = __LINE__ + 1;
  message = error_of([&] { hsplit(c, 4); });
  check_refusal(message,
                "torch.hsplit attempted to split along dimension 1, but the size of the dimension 6 is not "
                "divisible by the split_size 4!",
                line);
  line = __LINE__ + 1;
  message = error_of([&] { vsplit(v, 5); });
  check_refusal(message,
                "torch.vsplit requires a tensor with at least 2 dimensions, but got a tensor with 1 dimensions!", line);
  line = __LINE__ + 1;
  message = error_of([&] { dsplit(c, 0); });
  check_refusal(message, "split_size 0!", line);
}

}  // namespace test_ops_composites_stack_split
