// The composites of runtime/functional_index_more.h against float64 references written as plain
// loops over row-major positions, their gradients against central differences, and integer and
// bool dtypes where PyTorch takes them.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "finite_difference.h"
#include "runtime/ember.h"
#include "runtime/functional_index_more.h"

namespace test_index_more {

using namespace ember;
using namespace ember::testing;

namespace {

std::vector<double> host(const Tensor& t) { return t.to(kFloat64).contiguous().to_vector<double>(); }
Tensor longs(const std::vector<int64_t>& values, const Dims& sizes) {
  return from_vector<int64_t>(values, sizes, {.dtype = kInt64});
}
Tensor longs(const std::vector<int64_t>& values) { return longs(values, Dims{static_cast<int64_t>(values.size())}); }

}  // namespace

TEST_CASE("index_more: broadcast_shapes, broadcast_to and broadcast_tensors follow NumPy's rules") {
  CHECK(broadcast_shapes(std::vector<Dims>{{3, 1}, {1, 4}, {2, 1, 1}}) == Dims{2, 3, 4});
  CHECK(broadcast_shapes(std::vector<Dims>{}) == Dims{});
  CHECK(broadcast_shapes(std::vector<Dims>{{0, 1}, {5}}) == Dims{0, 5});
  const Tensor a = small_tensor({3, 1}, 1);
  const Tensor b = broadcast_to(a, {2, -1, 4});
  REQUIRE(b.sizes() == Dims{2, 3, 4});
  const std::vector<double> av = host(a), bv = host(b);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 4; ++k) CHECK(bv[(i * 3 + j) * 4 + k] == av[j]);
  CHECK(broadcast_to(small_tensor({0, 1}, 2), {0, 3}).sizes() == Dims{0, 3});
  const std::vector<Tensor> all = broadcast_tensors({a, small_tensor({4}, 3), scalar_tensor(2.0)});
  REQUIRE(all.size() == 3);
  for (const Tensor& t : all) CHECK(t.sizes() == Dims{3, 4});
  CHECK(host(all[2]) == std::vector<double>(12, 2.0));
  gradcheck_leaves([](const std::vector<Tensor>& x) { return broadcast_to(x[0], {2, 3, 4}); }, {leaf({3, 1}, 4)});
  gradcheck_leaves(
      [](const std::vector<Tensor>& x) {
        const std::vector<Tensor> both = broadcast_tensors({x[0], x[1]});
        return mul(both[0], both[1]);
      },
      {leaf({2, 1}, 5), leaf({3}, 6)});
}

TEST_CASE("index_more: take and take_along_dim match loops, with negative indices and broadcasting") {
  const Tensor a = small_tensor({3, 4}, 7);
  const std::vector<double> av = host(a);
  const Tensor index = longs({0, 11, -1, -12, 5, 5}, {2, 3});
  const Tensor taken = take(a, index);
  REQUIRE(taken.sizes() == Dims{2, 3});
  const std::vector<int64_t> flat{0, 11, 11, 0, 5, 5};
  for (size_t k = 0; k < flat.size(); ++k) CHECK(host(taken)[k] == av[flat[k]]);
  CHECK(take(a, longs({}, {0, 2})).sizes() == Dims{0, 2});
  CHECK(take(small_tensor({}, 8), longs({0, -1})).sizes() == Dims{2});
  const Tensor ints = from_vector<int32_t>({5, 6, 7}, Dims{3}, {.dtype = kInt32});
  CHECK(take(ints, longs({2, 0})).to_vector<int32_t>() == std::vector<int32_t>{7, 5});
  CHECK(take(gt(ints, scalar_tensor(5.0, {.dtype = kInt32})), longs({0, 1})).dtype() == kBool);
  gradcheck_leaves([&](const std::vector<Tensor>& x) { return take(x[0], index); }, {leaf({3, 4}, 9)});

  // take_along_dim with dim: a [3, 1, 4] and indices [1, 2, 2] broadcast to [3, 2, *].
  const Tensor b = small_tensor({3, 1, 4}, 10);
  const Tensor idx = longs({3, 0, 1, 1}, {1, 2, 2});
  const Tensor along = take_along_dim(b, idx, 2);
  REQUIRE(along.sizes() == Dims{3, 2, 2});
  const std::vector<double> bv = host(b), got = host(along);
  const std::vector<int64_t> iv{3, 0, 1, 1};
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t k = 0; k < 2; ++k) CHECK(got[(i * 2 + j) * 2 + k] == bv[i * 4 + iv[j * 2 + k]]);
  CHECK(host(take_along_dim(b, idx, -1)) == got);
  CHECK(host(take_along_dim(a, longs({11, 0}))) == std::vector<double>{av[11], av[0]});
  gradcheck_leaves([&](const std::vector<Tensor>& x) { return take_along_dim(x[0], idx, 2); }, {leaf({3, 1, 4}, 11)});
}

TEST_CASE("index_more: unravel_index gives PyTorch's coordinates, wrapping negative indices") {
  const std::vector<Tensor> coords = unravel_index(longs({0, 5, 23, -1, 7}), {2, 3, 4});
  REQUIRE(coords.size() == 3);
  const std::vector<int64_t> flat{0, 5, 23, 23, 7};
  for (size_t k = 0; k < flat.size(); ++k) {
    CHECK(coords[0].to_vector<int64_t>()[k] == flat[k] / 12);
    CHECK(coords[1].to_vector<int64_t>()[k] == flat[k] / 4 % 3);
    CHECK(coords[2].to_vector<int64_t>()[k] == flat[k] % 4);
  }
  const std::vector<Tensor> from_int32 = unravel_index(from_vector<int32_t>({7}, Dims{}, {.dtype = kInt32}), {4, 2});
  CHECK(from_int32[0].dtype() == kInt64);
  CHECK(from_int32[0].dim() == 0);
  CHECK(from_int32[0].item_int64() == 3);
  CHECK(from_int32[1].item_int64() == 1);
  CHECK(unravel_index(longs({}), {3}).at(0).numel() == 0);
}

TEST_CASE("index_more: index_fill and index_copy match loops, in and out of place, with gradients") {
  const Tensor a = small_tensor({3, 4}, 12);
  const std::vector<double> av = host(a);
  const Tensor filled = index_fill(a, 1, longs({0, -1}), 2.5);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) CHECK(host(filled)[i * 4 + j] == (j == 0 || j == 3 ? 2.5 : av[i * 4 + j]));
  Tensor in_place = a.clone();
  index_fill_(in_place, 1, longs({0, -1}), 2.5);
  CHECK(host(in_place) == host(filled));
  const Tensor ints = from_vector<int64_t>({1, 2, 3, 4}, Dims{2, 2}, {.dtype = kInt64});
  CHECK(index_fill(ints, 0, from_vector<int32_t>({1}, Dims{1}, {.dtype = kInt32}), 9.0).to_vector<int64_t>() ==
        std::vector<int64_t>{1, 2, 9, 9});
  const Tensor flags = zeros({3}, {.dtype = kBool});
  CHECK(host(index_fill(flags, 0, longs({1}), 1.0)) == std::vector<double>{0, 1, 0});
  gradcheck_leaves(
      [](const std::vector<Tensor>& x) {
        return index_fill(x[0], 0, longs({2, 0}), x[1]);
      },
      {leaf({3, 4}, 13), small_tensor({}, 14).requires_grad_()});

  const Tensor source = small_tensor({3, 2}, 15);
  const std::vector<double> sv = host(source);
  const Tensor copied = index_copy(a, 1, longs({3, -3}), source);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      const double expected = j == 3 ? sv[i * 2 + 0] : j == 1 ? sv[i * 2 + 1] : av[i * 4 + j];
      CHECK(host(copied)[i * 4 + j] == expected);
    }
  Tensor copied_in_place = a.clone();
  index_copy_(copied_in_place, 1, longs({3, -3}), source);
  CHECK(host(copied_in_place) == host(copied));
  CHECK(index_copy(a, 0, longs({}), small_tensor({0, 4}, 16)).sizes() == Dims{3, 4});
  CHECK(host(index_copy(scalar_tensor(1.0, {.dtype = kFloat64}), 0, longs({0}), doubles({4.0}))) ==
        std::vector<double>{4.0});
  gradcheck_leaves(
      [](const std::vector<Tensor>& x) {
        return index_copy(x[0], 1, longs({3, 1}), x[1]);
      },
      {leaf({3, 4}, 17), leaf({3, 2}, 18)});
  // A repeated index writes the last slice listed for it (rows 0 and 1 of source go to row 1,
  // row 1 wins), never their sum; the slices not written get no gradient.
  const Tensor rows = small_tensor({3, 4}, 42);
  const std::vector<double> rv = host(rows), repeated = host(index_copy(a, 0, longs({1, -2, 0}), rows));
  for (int64_t j = 0; j < 4; ++j) {
    CHECK(repeated[0 * 4 + j] == rv[2 * 4 + j]);
    CHECK(repeated[1 * 4 + j] == rv[1 * 4 + j]);
    CHECK(repeated[2 * 4 + j] == av[2 * 4 + j]);
  }
  gradcheck_leaves([](const std::vector<Tensor>& x) { return index_copy(x[0], 0, longs({1, -2, 0}), x[1]); },
                   {leaf({3, 4}, 43), leaf({3, 4}, 44)});
}

TEST_CASE("index_more: masked_scatter fills the true positions in row-major order, with gradients") {
  const Tensor a = small_tensor({2, 3}, 19);
  const Tensor mask = from_vector<bool>({true, false, true}, Dims{3}, {.dtype = kBool});  // broadcast over rows
  const Tensor source = small_tensor({5}, 20);
  const std::vector<double> av = host(a), sv = host(source), got = host(masked_scatter(a, mask, source));
  int64_t next = 0;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j) CHECK(got[i * 3 + j] == (j != 1 ? sv[next++] : av[i * 3 + j]));
  CHECK(host(masked_scatter(a, zeros({2, 3}, {.dtype = kBool}), doubles({}))) == av);
  const Tensor ints = from_vector<int32_t>({1, 2}, Dims{2}, {.dtype = kInt32});
  CHECK(masked_scatter(ints, from_vector<bool>({false, true}, Dims{2}, {.dtype = kBool}),
                       from_vector<int32_t>({7, 8}, Dims{2}, {.dtype = kInt32}))
            .to_vector<int32_t>() == std::vector<int32_t>{1, 7});
  gradcheck_leaves([&](const std::vector<Tensor>& x) { return masked_scatter(x[0], mask, x[1]); },
                   {leaf({2, 3}, 21), leaf({5}, 22)});
}

TEST_CASE("index_more: put writes or adds at flat indices, with gradients") {
  const Tensor a = small_tensor({2, 3}, 23);
  const Tensor source = small_tensor({3}, 24);
  const std::vector<double> av = host(a), sv = host(source);
  const Tensor index = longs({5, -6, 2});
  std::vector<double> written = av, added = av;
  const std::vector<int64_t> flat{5, 0, 2};
  for (size_t k = 0; k < 3; ++k) {
    written[flat[k]] = sv[k];
    added[flat[k]] += sv[k];
  }
  CHECK(host(put(a, index, source)) == written);
  CHECK(host(put(a, index, source, /*accumulate=*/true)) == added);
  CHECK(host(put(a, longs({1, 1}), doubles({1.0, 2.0}), true))[1] == av[1] + 3.0);
  // Without accumulate the last value listed for a repeated index is written; an earlier
  // infinite one leaves no NaN behind.
  CHECK(host(put(a, longs({1, -5, 4, 1}), doubles({INFINITY, 2.0, 3.0, 4.0})))[1] == 4.0);
  CHECK(host(put(a, longs({4, 1, 4}), doubles({1.0, 2.0, 3.0})))[4] == 3.0);
  gradcheck_leaves([&](const std::vector<Tensor>& x) { return put(x[0], index, x[1]); },
                   {leaf({2, 3}, 25), leaf({3}, 26)});
  gradcheck_leaves([&](const std::vector<Tensor>& x) { return put(x[0], index, x[1], true); },
                   {leaf({2, 3}, 27), leaf({3}, 28)});
}

TEST_CASE("index_more: select_scatter, slice_scatter and diagonal_scatter embed src where the view shows") {
  const Tensor a = small_tensor({3, 4}, 29);
  const std::vector<double> av = host(a);
  const Tensor row = small_tensor({4}, 30);
  const std::vector<double> rv = host(row), selected = host(select_scatter(a, row, 0, -1));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) CHECK(selected[i * 4 + j] == (i == 2 ? rv[j] : av[i * 4 + j]));
  const Tensor columns = small_tensor({3, 2}, 31);
  const std::vector<double> cv = host(columns), sliced = host(slice_scatter(a, columns, 1, 1, std::nullopt, 2));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) CHECK(sliced[i * 4 + j] == (j % 2 == 1 ? cv[i * 2 + j / 2] : av[i * 4 + j]));
  CHECK(host(slice_scatter(a, small_tensor({3, 0}, 32), 1, 10, 20)) == av);
  for (const int64_t offset : {-1, 0, 2}) {
    CAPTURE(offset);
    const int64_t length = offset >= 0 ? std::min<int64_t>(3, 4 - offset) : std::min<int64_t>(3 + offset, 4);
    const Tensor diag = small_tensor({length}, 33);
    const std::vector<double> dv = host(diag), got = host(diagonal_scatter(a, diag, offset));
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 4; ++j) {
        const bool on = j - i == offset;
        CHECK(got[i * 4 + j] == (on ? dv[offset >= 0 ? i : j] : av[i * 4 + j]));
      }
  }
  // A batched plane (dims 2 and 0 of [3, 2, 4]) against diagonal's own view of the result.
  const Tensor b = small_tensor({3, 2, 4}, 34);
  const Tensor src = small_tensor({2, 3}, 35);
  const Tensor embedded = diagonal_scatter(b, src, -1, 2, 0);
  CHECK(host(diagonal(embedded, -1, 2, 0)) == host(src));
  CHECK(host(sub(embedded, b).abs().sum()) != std::vector<double>{0.0});
  gradcheck_leaves([](const std::vector<Tensor>& x) { return select_scatter(x[0], x[1], 1, 2); },
                   {leaf({3, 4}, 36), leaf({3}, 37)});
  gradcheck_leaves([](const std::vector<Tensor>& x) { return slice_scatter(x[0], x[1], 0, -2); },
                   {leaf({3, 4}, 38), leaf({2, 4}, 39)});
  gradcheck_leaves([](const std::vector<Tensor>& x) { return diagonal_scatter(x[0], x[1], 1, -1, -3); },
                   {leaf({3, 2, 4}, 40), leaf({2, 2}, 41)});
}

}  // namespace test_index_more
