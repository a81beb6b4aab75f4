// split, chunk and unbind (runtime/functional_split.cpp): the pieces' shapes and values, that they
// are views of the input, their gradients by central differences, PyTorch's rule for in-place
// updates of them, and errors naming the function, the values and the caller's line.
#include <doctest/doctest.h>

#include <source_location>
#include <string>
#include <string_view>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "runtime/ember.h"

namespace test_split_chunk_unbind {

using namespace ember;
using ember::testing::error_of;
using ember::testing::gradcheck_leaves;
using ember::testing::leaf;
using ember::testing::names_line;
using ember::testing::values_of;

namespace {

// 0, 1, 2, ... in `sizes`, float64.
Tensor counting(const Dims& sizes) {
  return arange(static_cast<double>(sizes.product()), {.dtype = kFloat64}).reshape(sizes);
}

std::vector<Dims> shapes_of(const std::vector<Tensor>& pieces) {
  std::vector<Dims> shapes;
  for (const Tensor& piece : pieces) shapes.push_back(piece.sizes());
  return shapes;
}

void check_refusal(const std::string& message, std::string_view expected, int line,
                   std::source_location caller = std::source_location::current()) {
  INFO(message);
  CHECK(message.find(expected) != std::string::npos);
  CHECK(names_line(message, line, caller));
}

}  // namespace

TEST_CASE("split: pieces of split_size along a dim, the last one smaller, negative dims counting from the end") {
  const Tensor t = counting({3, 10});
  const std::vector<Tensor> pieces = split(t, 4, 1);
  CHECK(shapes_of(pieces) == std::vector<Dims>{{3, 4}, {3, 4}, {3, 2}});
  CHECK(values_of(pieces[0]) == std::vector<double>{0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23});
  CHECK(values_of(pieces[2]) == std::vector<double>{8, 9, 18, 19, 28, 29});
  CHECK(shapes_of(t.split(4, -1)) == shapes_of(pieces));
  CHECK(values_of(t.split(4, -1)[1]) == values_of(pieces[1]));
  // dim 0 by default; a split_size past the size gives one piece, as does the exact size.
  CHECK(shapes_of(split(t, 2)) == std::vector<Dims>{{2, 10}, {1, 10}});
  CHECK(shapes_of(split(t, 25, 1)) == std::vector<Dims>{{3, 10}});
  CHECK(shapes_of(split(t, 10, 1)) == std::vector<Dims>{{3, 10}});
  CHECK(shapes_of(split(t, 1, -2)) == std::vector<Dims>{{1, 10}, {1, 10}, {1, 10}});
  CHECK(values_of(split(t, 1, -2)[2]) == values_of(t.select(0, 2)));
  // An empty dim: one empty piece, also for split_size 0.
  CHECK(shapes_of(split(zeros({2, 0}), 3, 1)) == std::vector<Dims>{{2, 0}});
  CHECK(shapes_of(split(zeros({2, 0}), 0, 1)) == std::vector<Dims>{{2, 0}});
}

TEST_CASE("split with sizes: pieces of the given sizes, empty ones included (torch.split_with_sizes)") {
  const Tensor t = counting({2, 10});
  const std::vector<Tensor> pieces = split(t, {2, 0, 5, 3}, -1);
  CHECK(shapes_of(pieces) == std::vector<Dims>{{2, 2}, {2, 0}, {2, 5}, {2, 3}});
  CHECK(values_of(pieces[0]) == std::vector<double>{0, 1, 10, 11});
  CHECK(values_of(pieces[3]) == std::vector<double>{7, 8, 9, 17, 18, 19});
  CHECK(values_of(pieces[2]) == std::vector<double>{2, 3, 4, 5, 6, 12, 13, 14, 15, 16});
  CHECK(shapes_of(split_with_sizes(t, {1, 1})) == std::vector<Dims>{{1, 10}, {1, 10}});
  CHECK(shapes_of(t.split(std::vector<int64_t>{10}, 1)) == std::vector<Dims>{{2, 10}});
  CHECK(shapes_of(t.split_with_sizes({6, 4}, 1)) == std::vector<Dims>{{2, 6}, {2, 4}});
  CHECK(split(zeros({0, 3}), std::vector<int64_t>{}, 0).empty());
}

TEST_CASE("chunk: pieces of ceil(size / chunks), so possibly fewer than chunks, and chunks pieces of an empty dim") {
  auto chunk_sizes = [](int64_t size, int64_t chunks) {
    std::vector<int64_t> sizes;
    for (const Tensor& piece : chunk(counting({2, size}), chunks, -1)) sizes.push_back(piece.size(1));
    return sizes;
  };
  CHECK(chunk_sizes(6, 4) == std::vector<int64_t>{2, 2, 2});
  CHECK(chunk_sizes(5, 4) == std::vector<int64_t>{2, 2, 1});
  CHECK(chunk_sizes(5, 5) == std::vector<int64_t>{1, 1, 1, 1, 1});
  CHECK(chunk_sizes(3, 5) == std::vector<int64_t>{1, 1, 1});
  CHECK(chunk_sizes(7, 3) == std::vector<int64_t>{3, 3, 1});
  CHECK(chunk_sizes(7, 1) == std::vector<int64_t>{7});
  CHECK(chunk_sizes(0, 3) == std::vector<int64_t>{0, 0, 0});
  const Tensor t = counting({5, 2});
  const std::vector<Tensor> pieces = t.chunk(2);
  CHECK(values_of(pieces[1]) == std::vector<double>{6, 7, 8, 9});
  CHECK(values_of(chunk(t, 2, -1)[1]) == std::vector<double>{1, 3, 5, 7, 9});
}

TEST_CASE("unbind: the slices along a dim, that dim removed") {
  const Tensor t = counting({2, 3});
  const std::vector<Tensor> rows = unbind(t);
  CHECK(shapes_of(rows) == std::vector<Dims>{{3}, {3}});
  CHECK(values_of(rows[1]) == std::vector<double>{3, 4, 5});
  const std::vector<Tensor> columns = t.unbind(-1);
  CHECK(shapes_of(columns) == std::vector<Dims>{{2}, {2}, {2}});
  CHECK(values_of(columns[2]) == std::vector<double>{2, 5});
  CHECK(unbind(zeros({3, 0}), 1).empty());
  CHECK(shapes_of(unbind(zeros({3}))) == std::vector<Dims>{{}, {}, {}});
}

TEST_CASE("split, chunk, unbind: integer and bool tensors keep their dtype and values") {
  const Tensor integers = from_vector<int64_t>({1, -2, 3, -4, 5, -6}, {2, 3});
  const std::vector<Tensor> pieces = split(integers, {1, 2}, 1);
  CHECK(pieces[1].dtype() == kInt64);
  CHECK(pieces[1].contiguous().to_vector<int64_t>() == std::vector<int64_t>{-2, 3, 5, -6});
  const Tensor flags = from_vector<bool>({true, false, false, true, true, false}, {6});
  const std::vector<Tensor> chunks = chunk(flags, 4);
  REQUIRE(chunks.size() == 3);
  CHECK(chunks[1].dtype() == kBool);
  CHECK(chunks[1].to_vector<bool>() == std::vector<bool>{false, true});
  CHECK(unbind(integers, 1)[2].to_vector<int64_t>() == std::vector<int64_t>{3, -6});
}

TEST_CASE("split, chunk, unbind: the pieces are views sharing the input's storage, both ways") {
  Tensor t = counting({4, 3});
  const std::vector<Tensor> pieces = split(t, 3);
  const std::vector<Tensor> columns = unbind(t, 1);
  for (const Tensor& piece : pieces) CHECK(piece.impl()->storage == t.impl()->storage);
  CHECK(pieces[1].raw_data_ptr() == static_cast<void*>(t.data_ptr<double>() + 9));
  CHECK(columns[2].raw_data_ptr() == static_cast<void*>(t.data_ptr<double>() + 2));
  CHECK(chunk(t, 2, 1)[1].raw_data_ptr() == static_cast<void*>(t.data_ptr<double>() + 2));
  // Writing into the base shows through the pieces, and writing into a piece shows in the base.
  t.select(0, 3).fill_(-1.0);
  CHECK(values_of(pieces[1]) == std::vector<double>{-1, -1, -1});
  CHECK(values_of(columns[0]) == std::vector<double>{0, 3, 6, -1});
  Tensor first = pieces[0];
  first.mul_(2.0);
  CHECK(values_of(t.select(0, 1)) == std::vector<double>{6, 8, 10});
  CHECK(values_of(columns[1]) == std::vector<double>{2, 8, 14, -1});
}

TEST_CASE("split, chunk, unbind: gradients by central differences, unused pieces getting zero") {
  gradcheck_leaves([](const std::vector<Tensor>& in) {
    const std::vector<Tensor> pieces = split(in[0], 2, -1);  // widths 2, 2, 1
    return cat({pieces[2].mul(3.0), pieces[0].exp(), pieces[1].mul(pieces[1])}, 1);
  }, {leaf({3, 5}, 1)});
  gradcheck_leaves([](const std::vector<Tensor>& in) {
    const std::vector<Tensor> pieces = split(in[0], {1, 0, 3}, 0);
    return pieces[2].tanh().sum({0}).add(pieces[1].sum({0}));
  }, {leaf({4, 2}, 2)});
  gradcheck_leaves([](const std::vector<Tensor>& in) {
    const std::vector<Tensor> pieces = chunk(in[0].t(), 3, 0);  // a transposed input: strided pieces
    return pieces[0].mul(pieces[1]).add(pieces.back().sum());
  }, {leaf({3, 6}, 3)});
  gradcheck_leaves([](const std::vector<Tensor>& in) {
    const std::vector<Tensor> columns = unbind(in[0], -1);
    return stack({columns[2], columns[0].sigmoid()}, 0);  // column 1 unused
  }, {leaf({4, 3}, 4)});
}

TEST_CASE("split, chunk, unbind: a piece cannot be updated in place while recording gradients, as in PyTorch") {
  const Tensor x = leaf({4, 3}, 5);
  const Tensor base = x.mul(2.0);  // not a leaf: an ordinary view of it could be updated
  const Tensor other = ones({3}, {.dtype = kFloat64});
  int line = __LINE__ + 1;
  std::string message = error_of([&] { split(base, 2)[0].add_(ones({2, 3}, {.dtype = kFloat64})); });
  check_refusal(message, "add_: in-place update of a view (shape [2, 3]) while recording gradients: it is one of "
                         "several views returned by split", line);
  line = __LINE__ + 1;
  message = error_of([&] { chunk(base, 2, 1)[1].mul_(2.0); });
  check_refusal(message, "returned by chunk", line);
  line = __LINE__ + 1;
  message = error_of([&] { unbind(base)[3].view({3, 1}).copy_(other.view({3, 1})); });  // a view of a piece
  check_refusal(message, "returned by unbind", line);
  // Views of a leaf that requires grad: refused too (the piece's reason first, as PyTorch's).
  message = error_of([&] { split(x, {1, 3})[1].zero_(); });
  CHECK(message.find("returned by split") != std::string::npos);
  // Without recording (NoGradGuard, or nothing requires grad) the update is allowed and shows in the base.
  Tensor piece = unbind(base)[1];
  {
    NoGradGuard no_grad;
    piece.fill_(7.0);
  }
  CHECK(values_of(base.select(0, 1)) == std::vector<double>{7, 7, 7});
  Tensor plain = counting({2, 2});
  split(plain, 1)[1].add_(ones({1, 2}, {.dtype = kFloat64}));
  CHECK(values_of(plain) == std::vector<double>{0, 1, 3, 4});
}

TEST_CASE("split: a piece follows an in-place update of its base (ember remakes it, PyTorch refuses)") {
  const Tensor x = leaf({4}, 6);
  Tensor base = x.mul(1.0);
  const std::vector<Tensor> pieces = split(base, 2);
  base.mul_(3.0);
  pieces[1].mul(pieces[1]).sum().backward();
  const std::vector<double> values = values_of(x), grads = values_of(x.grad());
  CHECK(grads[0] == 0.0);
  CHECK(grads[1] == 0.0);
  CHECK(grads[2] == doctest::Approx(18.0 * values[2]).epsilon(1e-14));
  CHECK(grads[3] == doctest::Approx(18.0 * values[3]).epsilon(1e-14));
}

TEST_CASE("split, chunk, unbind: errors name the function, the values and the caller's line") {
  const Tensor t = counting({4, 3});
  int line = __LINE__ + 1;
  std::string message = error_of([&] { split(t, -1); });
  check_refusal(message, "split: split_size must be non-negative, got -1 (dim 0 of shape [4, 3])", line);
  line = __LINE__ + 1;
  message = error_of([&] { t.split(0, 1); });
  check_refusal(message, "split: split_size can be 0 only for a dim of size 0, got split_size 0 for dim 1 of size 3",
                line);
  line = __LINE__ + 1;
  message = error_of([&] { split(t, {1, 2}); });
  check_refusal(message, "split: split_sizes [1, 2] must sum to 4, the size of dim 0 (shape [4, 3])", line);
  line = __LINE__ + 1;
  message = error_of([&] { split_with_sizes(t, {4, -1, 0}, 1); });
  check_refusal(message, "split_with_sizes: split_sizes must be non-negative, got [4, -1, 0]", line);
  line = __LINE__ + 1;
  message = error_of([&] { chunk(t, 0); });
  check_refusal(message, "chunk: chunks must be greater than 0, got 0", line);
  line = __LINE__ + 1;
  message = error_of([&] { t.chunk(-2, 1); });
  check_refusal(message, "chunk: chunks must be greater than 0, got -2", line);
  line = __LINE__ + 1;
  message = error_of([&] { unbind(scalar_tensor(1.0)); });
  check_refusal(message, "unbind: expects a tensor with at least 1 dim, got a 0-d tensor", line);
  line = __LINE__ + 1;
  message = error_of([&] { split(scalar_tensor(1.0), 1); });
  check_refusal(message, "split: expects a tensor with at least 1 dim", line);
  line = __LINE__ + 1;
  message = error_of([&] { split(t, 2, 2); });
  check_refusal(message, "split:", line);
}

}  // namespace test_split_chunk_unbind
