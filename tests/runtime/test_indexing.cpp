// Indexing and joining: embedding, index_select, gather, one_hot, the scatter-adds behind their
// gradients (embedding_backward, index_add, scatter_add) and cat/stack, against loop references,
// with finite-difference gradients and error messages.
#include <doctest/doctest.h>

#include <limits>

#include "finite_difference.h"
#include "runtime/ember.h"

namespace test_indexing {

using namespace ember;
using ember::testing::dtype_options;
using ember::testing::gradcheck_leaves;
using ember::testing::leaf;
using ember::testing::small_tensor;
using ember::testing::values_of;

namespace {

Tensor indices(const std::vector<int64_t>& values, const Dims& sizes) {
  return from_vector<int64_t>(values, sizes, dtype_options(kInt64));
}
Tensor indices(const std::vector<int64_t>& values) { return indices(values, {static_cast<int64_t>(values.size())}); }

Tensor call_op(const char* name, std::initializer_list<Tensor> inputs, const Attrs& attrs) {
  return dispatch_one(lookup_op(name), inputs, attrs);
}

// Row-major offset of `coordinates` in `sizes`.
int64_t offset_of(const std::vector<int64_t>& coordinates, const Dims& sizes) {
  int64_t offset = 0;
  for (int d = 0; d < sizes.size(); ++d) offset = offset * sizes[d] + coordinates[d];
  return offset;
}
std::vector<int64_t> coordinates_of(int64_t offset, const Dims& sizes) {
  std::vector<int64_t> coordinates(sizes.size());
  for (int d = sizes.size() - 1; d >= 0; --d) {
    coordinates[d] = offset % sizes[d];
    offset /= sizes[d];
  }
  return coordinates;
}

// Plain-loop references in float64.
std::vector<double> reference_index_select(const Tensor& a, int dim, const std::vector<int64_t>& index) {
  const std::vector<double> values = values_of(a);
  Dims out_sizes = a.sizes();
  out_sizes[dim] = static_cast<int64_t>(index.size());
  std::vector<double> out(out_sizes.product());
  for (int64_t i = 0; i < out_sizes.product(); ++i) {
    std::vector<int64_t> at = coordinates_of(i, out_sizes);
    at[dim] = index[at[dim]];
    out[i] = values[offset_of(at, a.sizes())];
  }
  return out;
}
std::vector<double> reference_gather(const Tensor& a, int dim, const Tensor& index) {
  const std::vector<double> values = values_of(a);
  const std::vector<int64_t> chosen = index.to_vector<int64_t>();
  std::vector<double> out(index.numel());
  for (int64_t i = 0; i < index.numel(); ++i) {
    std::vector<int64_t> at = coordinates_of(i, index.sizes());
    at[dim] = chosen[i];
    out[i] = values[offset_of(at, a.sizes())];
  }
  return out;
}
std::vector<double> reference_scatter_add(const Tensor& self, int dim, const Tensor& index, const Tensor& source) {
  std::vector<double> out = values_of(self);
  const std::vector<double> from = values_of(source);
  const std::vector<int64_t> chosen = index.to_vector<int64_t>();
  for (int64_t i = 0; i < index.numel(); ++i) {
    const std::vector<int64_t> position = coordinates_of(i, index.sizes());
    std::vector<int64_t> target = position;
    target[dim] = chosen[i];
    out[offset_of(target, self.sizes())] += from[offset_of(position, source.sizes())];
  }
  return out;
}

void check_close(const std::vector<double>& actual, const std::vector<double>& expected, double tolerance = 1e-12) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO("element ", i);
    CHECK(actual[i] == doctest::Approx(expected[i]).epsilon(tolerance));
  }
}

}  // namespace

TEST_CASE("embedding gathers rows for indices of any shape") {
  const Tensor weight = small_tensor({5, 3}, 1);
  const Tensor index = indices({4, 0, 2, 2, 1, 4}, {2, 3});
  const Tensor out = embedding(weight, index);
  CHECK(out.sizes() == Dims{2, 3, 3});
  check_close(values_of(out), reference_index_select(weight, 0, index.to_vector<int64_t>()));
  // int32 indices, a transposed (non-contiguous) weight, a 0-d index and no indices at all.
  const Tensor strided = small_tensor({3, 5}, 2).transpose(0, 1);
  check_close(values_of(embedding(strided, index.to(kInt32))), reference_index_select(strided, 0, index.to_vector<int64_t>()));
  CHECK(embedding(weight, indices({3}, {})).sizes() == Dims{3});
  check_close(values_of(embedding(weight, indices({3}, {}))), reference_index_select(weight, 0, {3}));
  CHECK(embedding(weight, indices({}, {0})).sizes() == Dims{0, 3});
}

TEST_CASE("embedding gradient sums repeated rows deterministically") {
  gradcheck_leaves([](const std::vector<Tensor>& in) { return embedding(in[0], indices({1, 3, 1, 0, 1}, {5})); },
            {leaf({4, 3}, 3)});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return embedding(in[0].transpose(0, 1), indices({2, 2, 0, 1}, {2, 2})); },
            {leaf({2, 3}, 4)});

  // Large enough for the parallel path: same bits for 1 and 2 threads, equal to a loop sum.
  std::vector<int64_t> chosen;
  for (int i = 0; i < 3000; ++i) chosen.push_back((i * 7919) % 50);
  const Tensor index = indices(chosen);
  const Tensor grad = small_tensor({3000, 40}, 5, kFloat32);
  const int threads = get_num_threads();
  std::vector<std::vector<float>> results;
  for (int count : {1, 2}) {
    set_num_threads(count);
    results.push_back(call_op("embedding_backward", {grad, index}, {{"num_weights", int64_t{50}}}).to_vector<float>());
  }
  set_num_threads(threads);
  CHECK(results[0] == results[1]);
  const std::vector<double> g = values_of(grad);
  double row_seven = 0.0;
  for (int i = 0; i < 3000; ++i)
    if (chosen[i] == 7) row_seven += g[i * 40 + 2];
  CHECK(results[0][7 * 40 + 2] == doctest::Approx(row_seven).epsilon(1e-5));
}

TEST_CASE("index_select along every dim, strided inputs, 0-d and empty indices") {
  const Tensor a = small_tensor({3, 4, 5}, 6);
  for (int dim = 0; dim < 3; ++dim) {
    CAPTURE(dim);
    const std::vector<int64_t> chosen{2, 0, 2};
    check_close(values_of(index_select(a, dim, indices(chosen))), reference_index_select(a, dim, chosen));
  }
  const Tensor strided = a.permute({2, 0, 1});
  check_close(values_of(index_select(strided, -1, indices({3, 1}))), reference_index_select(strided, 2, {3, 1}));
  CHECK(index_select(a, 1, indices({1}, {})).sizes() == Dims{3, 1, 5});
  CHECK(index_select(a, 2, indices({}, {0})).sizes() == Dims{3, 4, 0});
}

TEST_CASE("index_select copies rows by element size, rows of 1, 3 and 16, in chunks over 1 to 3 threads") {
  // Rows go by a typed loop in chunks of kParallelGrain / inner rows; a chunk may start inside a
  // batch (2,048 rows of 16 is not a multiple of the 1,500 indices). Values are small integers (0
  // or 1 for bool), so every dtype holds them exactly and a row read from the wrong place shows.
  std::vector<int64_t> chosen;
  for (int i = 0; i < 1500; ++i) chosen.push_back((i * 7919) % 97);
  const Tensor index = indices(chosen);
  const int threads = get_num_threads();
  for (const DType dtype : {kBool, kBFloat16, kFloat16, kInt32, kFloat32, kInt64, kFloat64}) {
    for (const int64_t inner : {1, 3, 16}) {
      const Dims sizes = {30, 97, inner};
      std::vector<double> values(static_cast<size_t>(sizes.product()));
      for (size_t i = 0; i < values.size(); ++i)
        values[i] = static_cast<double>(dtype == kBool ? (i * 31) % 101 % 2 : (i * 31) % 101);
      const Tensor a = from_vector<double>(values, sizes, dtype_options(dtype));
      std::vector<double> expected;
      for (int64_t o = 0; o < 30; ++o)
        for (const int64_t k : chosen)
          for (int64_t i = 0; i < inner; ++i) expected.push_back(values[(o * 97 + k) * inner + i]);
      for (const int count : {1, 2, 3}) {
        set_num_threads(count);
        CAPTURE(dtype);
        CAPTURE(inner);
        CAPTURE(count);
        const Tensor out = index_select(a, 1, index);
        CHECK(out.dtype() == dtype);
        CHECK(values_of(out) == expected);
      }
    }
  }
  set_num_threads(threads);
}

TEST_CASE("index_select and index_add gradients") {
  gradcheck_leaves([](const std::vector<Tensor>& in) { return index_select(in[0], 1, indices({2, 0, 2, 2})); },
            {leaf({2, 3, 2}, 7)});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return index_select(in[0].transpose(0, 1), -1, indices({1, 1})); },
            {leaf({3, 4}, 8)});
  // index_add is itself differentiable (double backward of index_select).
  gradcheck_leaves([](const std::vector<Tensor>& in) {
    return call_op("index_add", {in[0], indices({0, 2, 0}), in[1]}, {{"dim", int64_t{1}}});
  }, {leaf({2, 3}, 9), leaf({2, 3}, 10)});
}

TEST_CASE("index_add adds source slices at the indices") {
  const Tensor self = small_tensor({3, 4}, 11);
  const Tensor source = small_tensor({3, 2}, 12);
  const Tensor out = call_op("index_add", {self, indices({3, 3}), source}, {{"dim", int64_t{-1}}});
  std::vector<double> expected = values_of(self);
  const std::vector<double> from = values_of(source);
  for (int r = 0; r < 3; ++r) expected[r * 4 + 3] += from[r * 2] + from[r * 2 + 1];
  check_close(values_of(out), expected);
}

TEST_CASE("gather follows PyTorch semantics") {
  const Tensor a = small_tensor({3, 4}, 13);
  const Tensor along_columns = indices({3, 0, 1, 1, 2, 3}, {3, 2});
  check_close(values_of(gather(a, 1, along_columns)), reference_gather(a, 1, along_columns));
  const Tensor along_rows = indices({2, 0, 1, 2, 1, 0}, {2, 3});  // smaller than a at dim 1
  check_close(values_of(gather(a, 0, along_rows)), reference_gather(a, 0, along_rows));
  // Strided input and strided index.
  const Tensor strided = small_tensor({4, 3}, 14).transpose(0, 1);
  const Tensor strided_index = indices({0, 3, 2, 1, 1, 0}, {2, 3}).transpose(0, 1);
  check_close(values_of(gather(strided, 1, strided_index)), reference_gather(strided, 1, strided_index));
  CHECK(gather(a, 1, indices({}, {3, 0})).sizes() == Dims{3, 0});
  check_close(values_of(gather(small_tensor({}, 15), 0, indices({0}, {}))), values_of(small_tensor({}, 15)));
}

TEST_CASE("gather and scatter_add gradients") {
  gradcheck_leaves([](const std::vector<Tensor>& in) { return gather(in[0], 1, indices({1, 1, 0, 2, 2, 2}, {2, 3})); },
            {leaf({2, 3}, 16)});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return gather(in[0].transpose(0, 1), 0, indices({3, 0, 3, 1}, {2, 2})); },
            {leaf({3, 4}, 17)});
  // src larger than index: the part index does not reach gets zero gradient.
  gradcheck_leaves([](const std::vector<Tensor>& in) {
    return call_op("scatter_add", {in[0], indices({0, 2, 2, 1}, {2, 2}), in[1]}, {{"dim", int64_t{1}}});
  }, {leaf({2, 3}, 18), leaf({3, 3}, 19)});
}

TEST_CASE("scatter_add accumulates in index order") {
  const Tensor self = small_tensor({2, 5}, 20);
  const Tensor index = indices({4, 4, 0, 1, 1, 1}, {2, 3});
  const Tensor source = small_tensor({2, 4}, 21).slice(1, 0, 3);  // strided src
  check_close(values_of(call_op("scatter_add", {self, index, source}, {{"dim", int64_t{1}}})),
              reference_scatter_add(self, 1, index, source));
  const Tensor rows = indices({1, 0, 1, 1, 1, 0, 0, 0, 0, 1}, {2, 5});
  const Tensor full_source = small_tensor({2, 5}, 22);
  check_close(values_of(call_op("scatter_add", {self, rows, full_source}, {{"dim", int64_t{0}}})),
              reference_scatter_add(self, 0, rows, full_source));
}

TEST_CASE("one_hot") {
  const Tensor index = indices({2, 0, 3, 0}, {2, 2});
  const Tensor inferred = one_hot(index);
  CHECK(inferred.dtype() == kInt64);
  CHECK(inferred.sizes() == Dims{2, 2, 4});
  CHECK(inferred.to_vector<int64_t>() == std::vector<int64_t>{0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0});
  CHECK(one_hot(indices({1}), 3).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 0});
  CHECK(one_hot(indices({}, {0}), 3).sizes() == Dims{0, 3});
  CHECK_THROWS_WITH_AS(one_hot(indices({1, -2})), doctest::Contains("one_hot: class index -2 is out of range for 2 classes"), Error);
  CHECK_THROWS_WITH_AS(one_hot(indices({1, 5}), 4), doctest::Contains("one_hot: class index 5 is out of range for 4 classes"), Error);
  CHECK_THROWS_WITH_AS(one_hot(indices({}, {0})), doctest::Contains("one_hot: cannot infer num_classes from an empty index"), Error);
  CHECK_THROWS_WITH_AS(one_hot(indices({-1, -3})), doctest::Contains("one_hot: class indices must be non-negative, got maximum -1"), Error);
  CHECK_THROWS_WITH_AS(one_hot(index.to(kInt32)), doctest::Contains("one_hot: index must be int64, got int32"), Error);
}

TEST_CASE("indexing errors name the op and the offending values") {
  const Tensor weight = small_tensor({5, 3}, 23);
  CHECK_THROWS_WITH_AS(embedding(weight, indices({1, 5})),
                       doctest::Contains("embedding: index 5 is out of range for a weight with 5 rows (weight [5, 3], indices [2])"), Error);
  CHECK_THROWS_WITH_AS(embedding(weight, indices({-1})), doctest::Contains("embedding: index -1 is out of range"), Error);
  CHECK_THROWS_WITH_AS(embedding(small_tensor({5}, 24), indices({1})),
                       doctest::Contains("embedding: weight must be 2-D [num_embeddings, embedding_dim], got shape [5]"), Error);
  CHECK_THROWS_WITH_AS(embedding(weight, small_tensor({2}, 25)), doctest::Contains("embedding: indices must be int64 or int32, got float64"), Error);
  const Tensor a = small_tensor({3, 4}, 26);
  CHECK_THROWS_WITH_AS(index_select(a, 1, indices({0, 4})),
                       doctest::Contains("index_select: index 4 is out of range for dim 1 of size 4 (input [3, 4])"), Error);
  CHECK_THROWS_WITH_AS(index_select(a, 0, indices({0, 1}, {1, 2})), doctest::Contains("index_select: index must be 1-D or 0-d, got shape [1, 2]"), Error);
  CHECK_THROWS_WITH_AS(index_select(a, 2, indices({0})), doctest::Contains("index_select"), Error);
  CHECK_THROWS_WITH_AS(gather(a, 0, indices({0, 3}, {1, 2})),
                       doctest::Contains("gather: index 3 is out of range for dim 0 of size 3 (input [3, 4], index [1, 2])"), Error);
  CHECK_THROWS_WITH_AS(gather(a, 0, indices({0, 1})), doctest::Contains("gather: index [2] must have as many dims as the input [3, 4]"), Error);
  CHECK_THROWS_WITH_AS(gather(a, 0, indices({0, 0, 0, 0, 0}, {1, 5})),
                       doctest::Contains("gather: index [1, 5] is larger than the input [3, 4] at dim 1"), Error);
  CHECK_THROWS_WITH_AS(gather(a, 0, indices({0}, {1, 1}).to(kInt32)), doctest::Contains("gather: index must be int64, got int32"), Error);
  CHECK_THROWS_WITH_AS(call_op("scatter_add", {a, indices({7}, {1, 1}), a}, {{"dim", int64_t{1}}}),
                       doctest::Contains("scatter_add: index 7 is out of range for dim 1 of size 4"), Error);
  CHECK_THROWS_WITH_AS(call_op("index_add", {a, indices({1}), small_tensor({3, 2}, 27)}, {{"dim", int64_t{1}}}),
                       doctest::Contains("index_add: source [3, 2] must match self [3, 4] except at dim 1"), Error);
}

TEST_CASE("cat joins any number of tensors with dtype promotion") {
  const Tensor a = small_tensor({2, 1, 3}, 30);
  const Tensor b = small_tensor({2, 4, 3}, 31, kFloat32);
  const Tensor c = small_tensor({3, 2, 2}, 32).permute({1, 2, 0});  // [2, 2, 3], strided
  const Tensor empty = small_tensor({2, 0, 3}, 33);
  const Tensor out = cat({a, b, empty, c}, -2);
  CHECK(out.dtype() == kFloat64);
  CHECK(out.sizes() == Dims{2, 7, 3});
  const std::vector<double> got = values_of(out);
  const std::vector<double> av = values_of(a), bv = values_of(b), cv = values_of(c);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 7; ++j)
      for (int k = 0; k < 3; ++k) {
        const double expected = j < 1 ? av[(i * 1 + j) * 3 + k]
                                : j < 5 ? bv[(i * 4 + j - 1) * 3 + k]
                                        : cv[(i * 2 + j - 5) * 3 + k];
        CHECK(got[(i * 7 + j) * 3 + k] == expected);
      }
  // Integers promote with floats; the legacy rule skips 1-D empty tensors.
  const Tensor mixed = cat({indices({1, 2}), small_tensor({1}, 34, kFloat32)});
  CHECK(mixed.dtype() == kFloat32);
  CHECK(mixed.to_vector<float>()[1] == 2.0f);
  CHECK(cat({small_tensor({2, 2}, 35), small_tensor({0}, 36)}, 1).sizes() == Dims{2, 2});
  CHECK(cat({small_tensor({0}, 37), small_tensor({0}, 38)}).sizes() == Dims{0});
  CHECK(cat({small_tensor({3}, 39)}).sizes() == Dims{3});
}

TEST_CASE("cat and stack gradients are slices of the output gradient") {
  gradcheck_leaves([](const std::vector<Tensor>& in) { return cat({in[0], in[1].transpose(0, 1), in[2]}, 1); },
            {leaf({2, 3}, 40), leaf({1, 2}, 41), leaf({2, 2}, 42)});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return cat({in[0], in[1], in[0]}, 0); },
                   {leaf({2, 3}, 43), leaf({1, 3}, 44)});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return stack({in[0], in[1]}, 1); },
                   {leaf({2, 3}, 45), leaf({2, 3}, 46)});
  // A float32 input of a promoted cat gets a float32 gradient.
  Tensor low = small_tensor({2}, 47, kFloat32).requires_grad_();
  Tensor high = small_tensor({3}, 48).requires_grad_();
  cat({low, high}).backward(small_tensor({5}, 49));
  CHECK(low.grad().dtype() == kFloat32);
  CHECK(high.grad().dtype() == kFloat64);
}

TEST_CASE("cat takes more inputs than an op mask has bits") {
  std::vector<Tensor> parts;
  for (int i = 0; i < 40; ++i) parts.push_back(small_tensor({1, 2}, 60 + i).requires_grad_());
  const Tensor joined = cat(parts, 0);
  CHECK(joined.sizes() == Dims{40, 2});
  CHECK(values_of(joined)[78] == values_of(parts[39])[0]);
  const Tensor grad = small_tensor({40, 2}, 59);
  joined.backward(grad);
  CHECK(values_of(parts[39].grad()) == std::vector<double>{values_of(grad)[78], values_of(grad)[79]});
}

TEST_CASE("cat errors name the op, the shapes and the dim") {
  CHECK_THROWS_WITH_AS(cat({small_tensor({3, 4}, 50), small_tensor({2, 5}, 51)}, 1),
                       doctest::Contains("cat: tensor 1 has shape [2, 5] but tensor 0 has shape [3, 4]; shapes must match except at dim 1"), Error);
  CHECK_THROWS_WITH_AS(cat({small_tensor({3, 4}, 52), small_tensor({3}, 53)}),
                       doctest::Contains("cat: tensor 1 has shape [3] but tensor 0 has shape [3, 4]"), Error);
  CHECK_THROWS_WITH_AS(cat({small_tensor({}, 54)}), doctest::Contains("cat: tensor 0 is zero-dimensional"), Error);
  CHECK_THROWS_WITH_AS(cat({small_tensor({2}, 55)}, 1), doctest::Contains("cat"), Error);
  CHECK_THROWS_WITH_AS(cat({}), doctest::Contains("cat: expected a non-empty list of tensors"), Error);
}

TEST_CASE("scatter_add and index_add wrap integer sums like add does") {
  // Signed overflow is undefined in C++ (UBSan flags it in the ASan preset's run); PyTorch's
  // integer scatter-adds wrap around, as ember's add does.
  const int32_t kMax = std::numeric_limits<int32_t>::max();
  const Tensor self = from_vector<int32_t>({kMax, 5}, {2}, dtype_options(kInt32));
  const Tensor source = from_vector<int32_t>({1, kMax}, {2}, dtype_options(kInt32));
  const Tensor scattered = call_op("scatter_add", {self, indices({0, 1}), source}, {{"dim", int64_t{0}}});
  CHECK(scattered.to_vector<int32_t>() ==
        std::vector<int32_t>{std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::min() + 4});
  const Tensor added = call_op("index_add", {self, indices({0, 1}), source}, {{"dim", int64_t{0}}});
  CHECK(added.to_vector<int32_t>() == scattered.to_vector<int32_t>());
  CHECK(add(self, source).to_vector<int32_t>() == scattered.to_vector<int32_t>());
}

}  // namespace test_indexing
