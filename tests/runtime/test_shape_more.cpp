// movedim, swapaxes, narrow, unflatten, meshgrid, tile, diag, diag_embed, diagflat, trace, eye,
// kron, cross and outer (runtime/functional_shape_more.h): values against float64 references
// written here as plain loops over indices, views sharing storage where PyTorch's are views,
// non-contiguous, empty and size-1 inputs and dtypes (gradients and errors:
// test_shape_more_gradients_errors.cpp).
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

namespace test_shape_more {

using namespace ember;
using ember::testing::error_of;
using ember::testing::gradcheck_leaves;
using ember::testing::leaf;
using ember::testing::names_line;
using ember::testing::small_tensor;
using ember::testing::values_of;

namespace {

using Index = std::vector<int64_t>;

// The multi-index of row-major position `flat` in `sizes`, and back.
Index unravel(int64_t flat, const Dims& sizes) {
  Index index(sizes.size());
  for (int d = sizes.size() - 1; d >= 0; --d) {
    index[d] = flat % sizes[d];
    flat /= sizes[d];
  }
  return index;
}
int64_t ravel(const Index& index, const Dims& sizes) {
  int64_t flat = 0;
  for (int d = 0; d < sizes.size(); ++d) flat = flat * sizes[d] + index[d];
  return flat;
}

// The reference of a function whose output element at `index` is `element(index)`, over `sizes`.
template <typename Element>
std::vector<double> build(const Dims& sizes, Element element) {
  std::vector<double> out(static_cast<size_t>(sizes.product()));
  for (int64_t flat = 0; flat < sizes.product(); ++flat) out[flat] = element(unravel(flat, sizes));
  return out;
}

bool shares_storage(const Tensor& a, const Tensor& b) { return a.impl()->storage == b.impl()->storage; }

// numpy's way to place the moved dims: the others in order, then each source inserted at its
// destination, in increasing destination order. order[p] is the input dim at output position p.
Index reference_movedim_order(int rank, Index source, Index destination) {
  for (int64_t& dim : source) dim = dim < 0 ? dim + rank : dim;
  for (int64_t& dim : destination) dim = dim < 0 ? dim + rank : dim;
  Index order;
  for (int d = 0; d < rank; ++d)
    if (std::find(source.begin(), source.end(), d) == source.end()) order.push_back(d);
  std::vector<std::pair<int64_t, int64_t>> moves;
  for (size_t i = 0; i < source.size(); ++i) moves.emplace_back(destination[i], source[i]);
  std::sort(moves.begin(), moves.end());
  for (const auto& [to, from] : moves) order.insert(order.begin() + to, from);
  return order;
}

}  // namespace

TEST_CASE("movedim, moveaxis: the moved dims land at their destinations, the others keep their order") {
  const Tensor base = small_tensor({2, 3, 4, 5}, 1);
  const Tensor strided = base.transpose(0, 3);  // [5, 3, 4, 2], not contiguous
  struct Move {
    Index source, destination;
  };
  for (const Tensor& a : {base, strided}) {
    for (const Move& move : {Move{{0}, {3}}, Move{{-1}, {0}}, Move{{0, 1}, {-1, -2}}, Move{{3, 0, 2}, {0, 1, 3}},
                             Move{{1, 2}, {1, 2}}, Move{{}, {}}, Move{{0, 1, 2, 3}, {3, 2, 1, 0}}}) {
      const Index order = reference_movedim_order(a.dim(), move.source, move.destination);
      Dims out_sizes;
      for (const int64_t d : order) out_sizes.push_back(a.size(d));
      const std::vector<double> in = values_of(a);
      const std::vector<double> expected = build(out_sizes, [&](const Index& out) {
        Index source_index(a.dim());
        for (int p = 0; p < a.dim(); ++p) source_index[order[p]] = out[p];
        return in[ravel(source_index, a.sizes())];
      });
      INFO("source ", Dims(move.source), " destination ", Dims(move.destination), " input ", a.sizes());
      const Tensor moved = movedim(a, Dims(move.source), Dims(move.destination));
      CHECK(moved.sizes() == out_sizes);
      CHECK(values_of(moved) == expected);
      CHECK(shares_storage(moved, base));
      CHECK(values_of(a.moveaxis(Dims(move.source), Dims(move.destination))) == expected);
    }
  }
  const Tensor single = movedim(base, 1, -1);
  CHECK(single.sizes() == Dims{2, 4, 5, 3});
  CHECK(values_of(single) == values_of(base.movedim(Dims{1}, Dims{3})));
  CHECK(values_of(moveaxis(base, -1, 0)) == values_of(base.permute({3, 0, 1, 2})));
  CHECK(base.moveaxis(0, 2).sizes() == Dims{3, 4, 2, 5});
  // Empty and 0-d tensors, and integer dtypes.
  CHECK(movedim(zeros({0, 2, 3}), 0, 2).sizes() == Dims{2, 3, 0});
  const Tensor scalar = scalar_tensor(2.0);
  CHECK(movedim(scalar, 0, -1).item() == 2.0);
  CHECK(shares_storage(movedim(scalar, 0, 0), scalar));
  const Tensor integers = from_vector<int64_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(movedim(integers, 0, 1).to_vector<int64_t>() == std::vector<int64_t>{1, 4, 2, 5, 3, 6});
}

TEST_CASE("swapaxes, swapdims: transpose by other names, views") {
  const Tensor a = small_tensor({2, 3, 4}, 2);
  CHECK(values_of(swapaxes(a, 0, 2)) == values_of(a.transpose(0, 2)));
  CHECK(swapdims(a, -1, 1).sizes() == Dims{2, 4, 3});
  CHECK(values_of(a.swapdims(-1, 1)) == values_of(a.transpose(1, 2)));
  CHECK(values_of(a.swapaxes(1, 1)) == values_of(a));
  CHECK(shares_storage(swapaxes(a, 0, 1), a));
  const Tensor moved = swapaxes(a, 0, 2);
  const std::vector<double> in = values_of(a);
  CHECK(values_of(moved) == build(moved.sizes(), [&](const Index& i) {
          return in[ravel({i[2], i[1], i[0]}, a.sizes())];
        }));
}

TEST_CASE("narrow: a view of start .. start + length - 1, negative starts wrapping") {
  const Tensor base = small_tensor({4, 6}, 3);
  const Tensor strided = base.t();  // [6, 4]
  for (const Tensor& a : {base, strided}) {
    const std::vector<double> in = values_of(a);
    for (const auto& [dim, start, length] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
             {0, 1, 2}, {1, 0, 4}, {-1, -3, 2}, {0, -4, 1}, {1, 4, 0}, {0, 0, 0}, {1, -1, 1}}) {
      INFO("dim ", dim, " start ", start, " length ", length, " input ", a.sizes());
      const int d = dim < 0 ? dim + 2 : dim;
      const int64_t begin = start < 0 ? start + a.size(d) : start;
      Dims out_sizes = a.sizes();
      out_sizes[d] = length;
      const Tensor narrowed = narrow(a, dim, start, length);
      CHECK(narrowed.sizes() == out_sizes);
      CHECK(values_of(narrowed) == build(out_sizes, [&](Index i) {
              i[d] += begin;
              return in[ravel(i, a.sizes())];
            }));
      CHECK(shares_storage(narrowed, base));
    }
  }
  CHECK(narrow(from_vector<int64_t>({5, 6, 7}, {3}), 0, -2, 2).to_vector<int64_t>() == std::vector<int64_t>{6, 7});
  // start == size with length 0 is allowed, as PyTorch allows it.
  CHECK(narrow(base, 1, 6, 0).sizes() == Dims{4, 0});
}

TEST_CASE("unflatten: one dim split into several, a view, one -1 inferred") {
  const Tensor base = small_tensor({2, 12, 3}, 4);
  const Tensor strided = base.transpose(0, 2);  // [3, 12, 2]
  for (const Tensor& a : {base, strided}) {
    const std::vector<double> in = values_of(a);
    for (const Dims& sizes : {Dims{3, 4}, Dims{2, -1, 3}, Dims{12}, Dims{1, 12, 1}, Dims{-1, 6}}) {
      INFO("sizes ", sizes, " input ", a.sizes());
      const Tensor out = unflatten(a, 1, sizes);
      CHECK(out.dim() == 2 + sizes.size());
      CHECK(out.size(0) == a.size(0));
      CHECK(out.size(-1) == a.size(2));
      // The split dim's pieces, row-major, make up the old index.
      CHECK(values_of(out) == build(out.sizes(), [&](const Index& i) {
              int64_t middle = 0;
              for (int k = 0; k < sizes.size(); ++k) middle = middle * out.size(1 + k) + i[1 + k];
              return in[ravel({i[0], middle, i.back()}, a.sizes())];
            }));
      CHECK(shares_storage(out, base));
    }
  }
  CHECK(unflatten(base, -1, {3, 1}).sizes() == Dims{2, 12, 3, 1});
  CHECK(base.unflatten(0, {-1}).sizes() == Dims{2, 12, 3});
  CHECK(unflatten(zeros({2, 0}), 1, {0, 5}).sizes() == Dims{2, 0, 5});
  CHECK(unflatten(zeros({0, 4}), 0, {3, 0}).sizes() == Dims{3, 0, 4});
  CHECK(unflatten(from_vector<int64_t>({1, 2, 3, 4}, {4}), 0, {2, 2}).to_vector<int64_t>() ==
        std::vector<int64_t>{1, 2, 3, 4});
}

TEST_CASE("meshgrid: expanded views, ij and xy indexing, 0-d inputs as one element") {
  const Tensor x = small_tensor({3}, 5);
  const Tensor y = small_tensor({8}, 6).slice(0, 0, 8, 2);  // 4 elements, stride 2
  const Tensor z = scalar_tensor(0.5, {.dtype = kFloat64});
  const std::vector<Tensor> inputs{x, y, z};
  const std::vector<std::vector<double>> in{values_of(x), values_of(y), values_of(z)};
  const std::vector<Tensor> ij = meshgrid(inputs);
  REQUIRE(ij.size() == 3);
  for (int k = 0; k < 3; ++k) {
    INFO("ij result ", k);
    CHECK(ij[k].sizes() == Dims{3, 4, 1});
    CHECK(values_of(ij[k]) == build(Dims{3, 4, 1}, [&](const Index& i) { return in[k][i[k]]; }));
    CHECK(shares_storage(ij[k], inputs[k]));
  }
  const std::vector<Tensor> xy = meshgrid(inputs, "xy");
  for (int k = 0; k < 3; ++k) {
    INFO("xy result ", k);
    CHECK(xy[k].sizes() == Dims{4, 3, 1});
    // Input 0 varies along dim 1, input 1 along dim 0.
    const int along = k == 0 ? 1 : (k == 1 ? 0 : 2);
    CHECK(values_of(xy[k]) == build(Dims{4, 3, 1}, [&](const Index& i) { return in[k][i[along]]; }));
    CHECK(shares_storage(xy[k], inputs[k]));
  }
  // One input: xy has nothing to swap. Empty inputs and integer dtypes.
  CHECK(values_of(meshgrid({x}, "xy")[0]) == in[0]);
  const std::vector<Tensor> empty = meshgrid({zeros({0}), zeros({2})});
  CHECK(empty[0].sizes() == Dims{0, 2});
  CHECK(empty[1].sizes() == Dims{0, 2});
  const std::vector<Tensor> integers =
      meshgrid({from_vector<int64_t>({1, 2}, {2}), from_vector<int64_t>({7, 8, 9}, {3})}, "xy");
  CHECK(integers[0].to_vector<int64_t>() == std::vector<int64_t>{1, 2, 1, 2, 1, 2});
  CHECK(integers[1].to_vector<int64_t>() == std::vector<int64_t>{7, 7, 8, 8, 9, 9});
}

TEST_CASE("tile: repeat with reps padded by leading 1s") {
  const Tensor base = small_tensor({2, 3}, 7);
  for (const Tensor& a : {base, base.t()}) {
    const std::vector<double> in = values_of(a);
    for (const Dims& reps : {Dims{2}, Dims{3, 2}, Dims{2, 1, 2}, Dims{}, Dims{0}, Dims{1, 1}}) {
      Dims padded_sizes = a.sizes(), padded_reps = reps;
      while (padded_reps.size() < padded_sizes.size()) padded_reps.insert(0, 1);
      while (padded_sizes.size() < padded_reps.size()) padded_sizes.insert(0, 1);
      Dims out_sizes;
      for (int d = 0; d < padded_sizes.size(); ++d) out_sizes.push_back(padded_sizes[d] * padded_reps[d]);
      INFO("reps ", reps, " input ", a.sizes());
      const Tensor tiled = tile(a, reps);
      CHECK(tiled.sizes() == out_sizes);
      CHECK(values_of(tiled) == build(out_sizes, [&](const Index& i) {
              Index source(a.dim());
              const int lead = out_sizes.size() - a.dim();
              for (int d = 0; d < a.dim(); ++d) source[d] = i[lead + d] % a.size(d);
              return in[ravel(source, a.sizes())];
            }));
      CHECK(!shares_storage(tiled, base));
    }
  }
  CHECK(base.tile({2}).sizes() == Dims{2, 6});
  CHECK(tile(scalar_tensor(3.0), {2}).sizes() == Dims{2});
  CHECK(tile(zeros({0, 2}), {3}).sizes() == Dims{0, 6});
  CHECK(tile(from_vector<bool>({true, false}, {2}), {2}).to_vector<bool>() ==
        std::vector<bool>{true, false, true, false});
}

TEST_CASE("diag: a vector onto a diagonal, and a matrix's diagonal copied out") {
  const Tensor vector = small_tensor({4}, 8);
  const Tensor strided_vector = small_tensor({8}, 9).slice(0, 1, 8, 2);  // 4 elements, stride 2
  for (const Tensor& v : {vector, strided_vector}) {
    const std::vector<double> in = values_of(v);
    for (const int64_t offset : {0, 1, 3, -2, -5}) {
      INFO("offset ", offset);
      const int64_t size = 4 + std::abs(offset);
      const Tensor matrix = diag(v, offset);
      CHECK(matrix.sizes() == Dims{size, size});
      CHECK(values_of(matrix) == build(Dims{size, size}, [&](const Index& i) {
              return i[1] - i[0] == offset ? in[offset >= 0 ? i[0] : i[1]] : 0.0;
            }));
    }
  }
  const Tensor base = small_tensor({3, 5}, 10);
  for (const Tensor& m : {base, base.t(), base.slice(1, 0, 5, 2)}) {
    const std::vector<double> in = values_of(m);
    for (const int64_t offset : {0, 1, 2, -1, -2, 4, 5, -3, 9, -9}) {
      INFO("offset ", offset, " matrix ", m.sizes());
      std::vector<double> expected;
      for (int64_t i = 0; i < m.size(0); ++i)
        if (i + offset >= 0 && i + offset < m.size(1)) expected.push_back(in[ravel({i, i + offset}, m.sizes())]);
      const Tensor diagonal = diag(m, offset);
      CHECK(diagonal.sizes() == Dims{static_cast<int64_t>(expected.size())});
      CHECK(values_of(diagonal) == expected);
      CHECK(!shares_storage(diagonal, base));
    }
  }
  CHECK(values_of(base.diag()) == values_of(diag(base)));
  CHECK(diag(zeros({0})).sizes() == Dims{0, 0});
  CHECK(values_of(diag(zeros({0}), 2)) == std::vector<double>(4, 0.0));
  CHECK(diag(zeros({0, 3})).sizes() == Dims{0});
  CHECK(diag(from_vector<double>({2.5}, {1}), -1).sizes() == Dims{2, 2});
  CHECK(diag(from_vector<int64_t>({4, 5}, {2})).to_vector<int64_t>() == std::vector<int64_t>{4, 0, 0, 5});
  CHECK(diag(from_vector<int64_t>({1, 2, 3, 4}, {2, 2}), 1).to_vector<int64_t>() == std::vector<int64_t>{2});
  CHECK(diag(from_vector<bool>({true, true}, {2})).to_vector<bool>() == std::vector<bool>{true, false, false, true});
  const Tensor float32 = diag(small_tensor({3}, 11, kFloat32));
  CHECK(float32.dtype() == kFloat32);
  CHECK(values_of(diag(float32)) == values_of(small_tensor({3}, 11, kFloat32)));
  // An inf off the diagonal stays out of the copied diagonal.
  const Tensor infinite = from_vector<double>({1.0, INFINITY, -INFINITY, 2.0}, {2, 2});
  CHECK(values_of(diag(infinite)) == std::vector<double>{1.0, 2.0});
}

TEST_CASE("diag_embed, diagflat: the last dim on a diagonal of a new plane, and of the flattened input") {
  const Tensor base = small_tensor({2, 3}, 12);
  struct Case {
    int64_t offset, dim1, dim2;
  };
  for (const Tensor& a : {base, small_tensor({3, 2}, 13).t()}) {
    const std::vector<double> in = values_of(a);
    for (const Case& c :
         {Case{0, -2, -1}, Case{1, 0, 2}, Case{-2, 2, 0}, Case{2, 1, 0}, Case{0, 0, -1}, Case{-1, -3, -2}}) {
      INFO("offset ", c.offset, " dim1 ", c.dim1, " dim2 ", c.dim2, " input ", a.sizes());
      const int d1 = c.dim1 < 0 ? c.dim1 + 3 : c.dim1, d2 = c.dim2 < 0 ? c.dim2 + 3 : c.dim2;
      const int64_t size = 3 + std::abs(c.offset);
      const int batch_dim = 3 - d1 - d2;  // the one dim that is neither
      Dims out_sizes = Dims::filled(3, size);
      out_sizes[batch_dim] = 2;
      const Tensor embedded = diag_embed(a, c.offset, c.dim1, c.dim2);
      CHECK(embedded.sizes() == out_sizes);
      CHECK(embedded.is_contiguous());
      CHECK(values_of(embedded) == build(out_sizes, [&](const Index& i) {
              if (i[d2] - i[d1] != c.offset) return 0.0;
              return in[ravel({i[batch_dim], c.offset >= 0 ? i[d1] : i[d2]}, a.sizes())];
            }));
    }
  }
  CHECK(values_of(base.diag_embed(1)) == values_of(diag_embed(base, 1, -2, -1)));
  CHECK(values_of(diag_embed(small_tensor({4}, 14), -1)) == values_of(diag(small_tensor({4}, 14), -1)));
  CHECK(diag_embed(zeros({3, 0})).sizes() == Dims{3, 0, 0});
  CHECK(diag_embed(zeros({0, 2}), 1).sizes() == Dims{0, 3, 3});
  CHECK(diag_embed(from_vector<int64_t>({7, 8}, {1, 2})).to_vector<int64_t>() == std::vector<int64_t>{7, 0, 0, 8});
  // diagflat: the input flattened in row-major order (a transposed input too).
  const Tensor strided = base.t();
  for (const int64_t offset : {0, 2, -1}) {
    INFO("diagflat offset ", offset);
    CHECK(values_of(diagflat(strided, offset)) == values_of(diag(strided.contiguous().reshape({6}), offset)));
  }
  CHECK(values_of(base.diagflat()) == values_of(diag(base.reshape({6}))));
  CHECK(values_of(diagflat(scalar_tensor(3.0, {.dtype = kFloat64}), 1)) == std::vector<double>{0, 3, 0, 0});
  CHECK(diagflat(zeros({0, 4})).sizes() == Dims{0, 0});
}

TEST_CASE("trace: the main diagonal's sum, integers summing to int64") {
  const Tensor base = small_tensor({3, 5}, 15);
  for (const Tensor& m : {base, base.t(), base.slice(1, 1, 5, 2)}) {
    const std::vector<double> in = values_of(m);
    double expected = 0.0;
    for (int64_t i = 0; i < std::min(m.size(0), m.size(1)); ++i) expected += in[ravel({i, i}, m.sizes())];
    INFO("matrix ", m.sizes());
    CHECK(trace(m).item() == doctest::Approx(expected).epsilon(1e-14));
    CHECK(trace(m).dim() == 0);
  }
  CHECK(base.trace().item() == trace(base).item());
  const Tensor integers = from_vector<int32_t>({1, 2, 3, 4}, {2, 2});
  CHECK(trace(integers).dtype() == kInt64);
  CHECK(trace(integers).item_int64() == 5);
  CHECK(trace(zeros({0, 3})).item() == 0.0);
}

TEST_CASE("eye: ones on the main diagonal, any dtype and shape") {
  for (const auto& [n, m] : std::vector<std::pair<int64_t, int64_t>>{{3, 3}, {2, 4}, {4, 1}, {0, 2}, {1, 1}, {0, 0}}) {
    INFO("n ", n, " m ", m);
    const std::vector<double> expected = build(Dims{n, m}, [](const Index& i) { return i[0] == i[1] ? 1.0 : 0.0; });
    const Tensor floats = eye(n, m);
    CHECK(floats.dtype() == kFloat32);
    CHECK(floats.sizes() == Dims{n, m});
    CHECK(values_of(floats) == expected);
    CHECK(values_of(eye(n, m, {.dtype = kFloat64})) == expected);
    const std::vector<int64_t> integers = eye(n, m, {.dtype = kInt64}).to_vector<int64_t>();
    CHECK(std::vector<double>(integers.begin(), integers.end()) == expected);
    const std::vector<bool> bools = eye(n, m, {.dtype = kBool}).to_vector<bool>();
    CHECK(std::vector<double>(bools.begin(), bools.end()) == expected);
  }
  for (const DType dtype : {kBFloat16, kFloat16}) {
    const Tensor half = eye(2, 3, {.dtype = dtype});
    CHECK(half.dtype() == dtype);
    CHECK(values_of(half) == std::vector<double>{1, 0, 0, 0, 1, 0});
    // 16-bit values pass through diag untouched (0.5, 0.25, 0.125 are exact in both).
    const Tensor vector = from_vector<double>({0.5, 0.25, 0.125}, {3}, {.dtype = dtype});
    CHECK(diag(vector).dtype() == dtype);
    CHECK(values_of(diag(diag(vector), 0)) == std::vector<double>{0.5, 0.25, 0.125});
    CHECK(values_of(kron(vector, vector)).at(5) == 0.03125);
  }
  CHECK(eye(3).sizes() == Dims{3, 3});
  CHECK(values_of(eye(2, {.dtype = kInt32})) == std::vector<double>{1, 0, 0, 1});
  const Tensor trainable = eye(2, {.dtype = kFloat64, .requires_grad = true});
  CHECK(trainable.requires_grad());
  CHECK(trainable.is_leaf());
}

TEST_CASE("kron: blocks of b scaled by a's elements, ranks padded with leading 1s") {
  struct Shapes {
    Dims a, b;
  };
  for (const Shapes& shapes : {Shapes{{2, 3}, {3, 2}}, Shapes{{3}, {2, 2}}, Shapes{{2, 1, 2}, {2}}, Shapes{{}, {3}},
                               Shapes{{2, 2}, {}}, Shapes{{1, 2, 1, 2, 1}, {2, 1, 2, 1, 2}}, Shapes{{0, 2}, {2, 3}},
                               Shapes{{2, 1, 1, 1, 1}, {1, 3}}, Shapes{{2, 1, 1, 1, 3}, {3, 1, 1, 2, 2}}}) {
    for (const bool transposed : {false, true}) {
      Tensor a = small_tensor(shapes.a, 16), b = small_tensor(shapes.b, 17);
      // A non-contiguous a of the same shape: the transpose of a tensor of the reversed shape.
      if (transposed && a.dim() >= 2) {
        Dims reversed = shapes.a;
        std::swap(reversed[0], reversed[reversed.size() - 1]);
        a = small_tensor(reversed, 18).transpose(0, a.dim() - 1);
      }
      const int rank = std::max(a.dim(), b.dim());
      Dims pa = a.sizes(), pb = b.sizes(), out_sizes;
      while (pa.size() < rank) pa.insert(0, 1);
      while (pb.size() < rank) pb.insert(0, 1);
      for (int d = 0; d < rank; ++d) out_sizes.push_back(pa[d] * pb[d]);
      const std::vector<double> va = values_of(a), vb = values_of(b);
      INFO("a ", a.sizes(), " b ", b.sizes(), " transposed ", transposed);
      const Tensor product = kron(a, b);
      CHECK(product.sizes() == out_sizes);
      CHECK(values_of(product) == build(out_sizes, [&](const Index& i) {
              Index ia(rank), ib(rank);
              for (int d = 0; d < rank; ++d) {
                ia[d] = i[d] / pb[d];
                ib[d] = i[d] % pb[d];
              }
              return va[ravel(ia, pa)] * vb[ravel(ib, pb)];
            }));
    }
  }
  CHECK(values_of(small_tensor({2}, 19).kron(small_tensor({3}, 20))) ==
        values_of(kron(small_tensor({2}, 19), small_tensor({3}, 20))));
  // Types promote as mul's.
  const Tensor mixed = kron(from_vector<int64_t>({1, 2}, {2}), from_vector<double>({0.5, 3.0}, {2}));
  CHECK(mixed.dtype() == kFloat64);
  CHECK(values_of(mixed) == std::vector<double>{0.5, 3.0, 1.0, 6.0});
  CHECK(kron(from_vector<int64_t>({2, 3}, {2}), from_vector<int64_t>({1, -1}, {2})).to_vector<int64_t>() ==
        std::vector<int64_t>{2, -2, 3, -3});
}

TEST_CASE("cross, linalg_cross: 3-vectors along a dim, other dims broadcasting") {
  struct Case {
    Dims a, b;
    int64_t dim;
  };
  for (const Case& c : {Case{{3}, {3}, 0}, Case{{4, 3}, {4, 3}, -1}, Case{{3, 2}, {3, 1}, 0},
                        Case{{2, 1, 3}, {1, 4, 3}, 2}, Case{{2, 3, 2}, {2, 3, 2}, 1}, Case{{0, 3}, {1, 3}, 1}}) {
    const Tensor a = small_tensor(c.a, 21), b = small_tensor(c.b, 22);
    Dims out_sizes;
    for (int d = 0; d < a.dim(); ++d) out_sizes.push_back(a.size(d) == 1 ? b.size(d) : a.size(d));  // broadcast
    const int d = c.dim < 0 ? c.dim + a.dim() : c.dim;
    const std::vector<double> va = values_of(a), vb = values_of(b);
    // The component k of the result at i, with broadcast (size-1) dims read at 0.
    auto component = [&](const std::vector<double>& values, const Tensor& t, Index i, int64_t k) {
      for (int e = 0; e < t.dim(); ++e) i[e] = t.size(e) == 1 ? 0 : i[e];
      i[d] = k;
      return values[ravel(i, t.sizes())];
    };
    const std::vector<double> expected = build(out_sizes, [&](const Index& i) {
      const int64_t k = i[d];
      return component(va, a, i, (k + 1) % 3) * component(vb, b, i, (k + 2) % 3) -
             component(va, a, i, (k + 2) % 3) * component(vb, b, i, (k + 1) % 3);
    });
    INFO("a ", c.a, " b ", c.b, " dim ", c.dim);
    const std::vector<double> got = values_of(linalg_cross(a, b, c.dim));
    REQUIRE(got.size() == expected.size());
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(expected[i]).epsilon(1e-14));
    CHECK(values_of(cross(a, b, c.dim)) == got);
    CHECK(values_of(a.cross(b, c.dim)) == got);
  }
  // The last dim by default; a transposed input; integer vectors; e_x x e_y = e_z.
  const Tensor a = small_tensor({3, 4}, 23), b = small_tensor({4, 3}, 24);
  CHECK(values_of(linalg_cross(a.t(), b)) == values_of(linalg_cross(a.t().contiguous(), b, 1)));
  CHECK(linalg_cross(from_vector<int64_t>({1, 0, 0}, {3}), from_vector<int64_t>({0, 1, 0}, {3})).to_vector<int64_t>() ==
        std::vector<int64_t>{0, 0, 1});
  const Tensor float32 = linalg_cross(small_tensor({3}, 25, kFloat32), small_tensor({3}, 26, kFloat32));
  CHECK(float32.dtype() == kFloat32);
}

TEST_CASE("outer, ger: every product of two vectors") {
  const Tensor a = small_tensor({3}, 27), b = small_tensor({8}, 28).slice(0, 0, 8, 2);
  const std::vector<double> va = values_of(a), vb = values_of(b);
  const std::vector<double> expected = build(Dims{3, 4}, [&](const Index& i) { return va[i[0]] * vb[i[1]]; });
  CHECK(outer(a, b).sizes() == Dims{3, 4});
  CHECK(values_of(outer(a, b)) == expected);
  CHECK(values_of(ger(a, b)) == expected);
  CHECK(values_of(a.outer(b)) == expected);
  CHECK(outer(zeros({0}), zeros({2})).sizes() == Dims{0, 2});
  CHECK(outer(from_vector<int64_t>({2, 3}, {2}), from_vector<int64_t>({4}, {1})).to_vector<int64_t>() ==
        std::vector<int64_t>{8, 12});
}

TEST_CASE("dot, vdot: the sum of products of two vectors, in their dtype") {
  const Tensor a = small_tensor({5}, 29), b = small_tensor({10}, 32).slice(0, 1, 10, 2);
  const std::vector<double> va = values_of(a), vb = values_of(b);
  double expected = 0.0;
  for (size_t i = 0; i < va.size(); ++i) expected += va[i] * vb[i];
  CHECK(dot(a, b).dim() == 0);
  CHECK(dot(a, b).item() == doctest::Approx(expected).epsilon(1e-14));
  CHECK(vdot(a, b).item() == dot(a, b).item());
  CHECK(a.dot(b).item() == dot(a, b).item());
  const Tensor float32 = dot(a.to(kFloat32), b.to(kFloat32));
  CHECK(float32.dtype() == kFloat32);
  CHECK(float32.item() == doctest::Approx(expected).epsilon(1e-6));
  const Tensor integers = dot(from_vector<int32_t>({3, -2}, {2}), from_vector<int32_t>({4, 5}, {2}));
  CHECK(integers.dtype() == kInt32);
  CHECK(integers.item_int64() == 2);
  CHECK(dot(zeros({0}), zeros({0})).item() == 0.0);
}

}  // namespace test_shape_more
