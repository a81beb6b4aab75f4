// einsum and tensordot against a float64 brute-force reference (every assignment of every index),
// their gradients by finite differences, that a contraction is one bmm, and every error message.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "host_read_recorder.h"
#include "runtime/dispatch.h"
#include "runtime/ember.h"

namespace test_einsum {

using namespace ember;
using ember::testing::error_of;
using ember::testing::gradcheck_leaves;
using ember::testing::leaf;
using ember::testing::OpNameRecorder;
using ember::testing::names_line;
using ember::testing::small_tensor;
using ember::testing::values_of;

namespace {

struct Expected {
  std::vector<double> values;
  std::vector<int64_t> shape;
};

// The reference: `equation` uses letters only, with an explicit output. Every index runs over its
// size; a size-1 dim broadcasts (its one element serves every value of the index). Written apart
// from the implementation: no parsing shortcuts, no tensor ops, just the defining sum.
Expected reference_einsum(const std::string& equation, const std::vector<Tensor>& operands) {
  const size_t arrow = equation.find("->");
  REQUIRE(arrow != std::string::npos);
  std::vector<std::string> inputs(1);
  for (const char c : equation.substr(0, arrow)) {
    if (c == ',') {
      inputs.emplace_back();
    } else {
      inputs.back() += c;
    }
  }
  const std::string output = equation.substr(arrow + 2);
  REQUIRE(inputs.size() == operands.size());
  std::array<int64_t, 128> size;
  size.fill(-1);
  std::string letters;
  for (size_t k = 0; k < inputs.size(); ++k) {
    REQUIRE(static_cast<int>(inputs[k].size()) == operands[k].dim());
    for (size_t d = 0; d < inputs[k].size(); ++d) {
      const char c = inputs[k][d];
      if (size[c] == -1) letters += c;
      if (size[c] == -1 || size[c] == 1) size[c] = operands[k].sizes()[static_cast<int>(d)];
    }
  }
  Expected expected;
  int64_t output_count = 1;
  for (const char c : output) {
    expected.shape.push_back(size[c]);
    output_count *= size[c];
  }
  expected.values.assign(static_cast<size_t>(output_count), 0.0);
  std::vector<std::vector<double>> values;
  for (const Tensor& operand : operands) values.push_back(values_of(operand));
  int64_t assignments = 1;
  for (const char c : letters) assignments *= size[c];
  std::array<int64_t, 128> index{};
  for (int64_t flat = 0; flat < assignments; ++flat) {
    int64_t rest = flat;
    for (size_t l = letters.size(); l-- > 0;) {
      index[letters[l]] = rest % size[letters[l]];
      rest /= size[letters[l]];
    }
    double product = 1.0;
    for (size_t k = 0; k < inputs.size(); ++k) {
      int64_t offset = 0;
      for (size_t d = 0; d < inputs[k].size(); ++d) {
        const int64_t dim_size = operands[k].sizes()[static_cast<int>(d)];
        offset = offset * dim_size + (dim_size == 1 ? 0 : index[inputs[k][d]]);
      }
      product *= values[k][static_cast<size_t>(offset)];
    }
    int64_t out = 0;
    for (const char c : output) out = out * size[c] + index[c];
    expected.values[static_cast<size_t>(out)] += product;
  }
  return expected;
}

void check_matches(const Tensor& actual, const Expected& expected, double tolerance) {
  REQUIRE(actual.sizes().vec() == expected.shape);
  const std::vector<double> values = values_of(actual);
  REQUIRE(values.size() == expected.values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    INFO("element ", i, ": got ", values[i], ", expected ", expected.values[i]);
    REQUIRE(std::abs(values[i] - expected.values[i]) <= tolerance * (1.0 + std::abs(expected.values[i])));
  }
}

struct Form {
  const char* equation;
  const char* reference;  // the same sum with letters only and an explicit output
  std::vector<Dims> shapes;
};

const std::vector<Form>& forms() {
  static const std::vector<Form> table = {
      {"ij,jk->ik", "ij,jk->ik", {{3, 4}, {4, 5}}},                         // matmul
      {"bij,bjk->bik", "bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}},             // batched matmul
      {"i,j->ij", "i,j->ij", {{3}, {4}}},                                   // outer product
      {"ii->", "ii->", {{4, 4}}},                                           // trace
      {"ii->i", "ii->i", {{4, 4}}},                                         // diagonal
      {"ij->ji", "ij->ji", {{3, 5}}},                                       // transpose
      {"ij->", "ij->", {{3, 5}}},                                           // sum of all
      {"ijk->j", "ijk->j", {{2, 3, 4}}},                                    // sum of one operand over some
      {"bn,anm,bm->ba", "bn,anm,bm->ba", {{2, 3}, {4, 3, 5}, {2, 5}}},      // bilinear
      {"ij,jk,kl->il", "ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 5}}},           // three operands
      {"i,i,i->", "i,i,i->", {{5}, {5}, {5}}},                              // three-way dot
      {"...ij,...jk->...ik", "abij,bjk->abik", {{2, 1, 3, 4}, {5, 4, 2}}},  // ellipsis, broadcast batch
      {"...ij->ij", "abij->ij", {{2, 3, 4, 5}}},                            // ellipsis summed out
      {"i...,i...->...", "iab,ib->ab", {{3, 2, 4}, {3, 4}}},                // ellipsis after a letter
      {"...ii->...i", "aii->ai", {{2, 3, 3}}},                              // ellipsis and diagonal
      {"ij,jk", "ij,jk->ik", {{3, 4}, {4, 5}}},                             // implicit output
      {"ba", "ba->ab", {{3, 4}}},                                           // implicit: alphabetical
      {"aB,Cd", "aB,Cd->BCad", {{2, 3}, {4, 5}}},                           // implicit: upper case first
      {"ii", "ii->", {{3, 3}}},                                             // implicit trace
      {"...i,...i", "abi,bi->ab", {{2, 3, 4}, {3, 4}}},                     // implicit: ellipsis first
      {" i j , j k -> i k ", "ij,jk->ik", {{3, 4}, {4, 5}}},                // spaces
      {"iij,jk->ik", "iij,jk->ik", {{3, 3, 4}, {4, 2}}},                    // repeated index, contracted
      {"iji->ij", "iji->ij", {{3, 4, 3}}},                                  // repeated apart
      {"iii->i", "iii->i", {{3, 3, 3}}},                                    // three times
      {"ii,ij->j", "ii,ij->j", {{3, 3}, {3, 4}}},                           // diagonal feeds a product
      {"ij,jk->ik", "ij,jk->ik", {{3, 1}, {4, 5}}},                         // size 1 contracted against 4
      {"ij,ij->ij", "ij,ij->ij", {{3, 1}, {1, 4}}},                         // size 1 kept in the output
      {"i,i->i", "i,i->i", {{1}, {4}}},                                     // size 1 elementwise
      {"bij,bjk->bik", "bij,bjk->bik", {{1, 3, 4}, {2, 4, 5}}},             // batch size 1 against 2
      {"i,i,i->i", "i,i,i->i", {{1}, {1}, {4}}},                            // size 1 through a step
      {"ij,jk->ik", "ij,jk->ik", {{3, 0}, {0, 4}}},                         // size-0 contracted: zeros
      {"ij,jk->ik", "ij,jk->ik", {{0, 2}, {2, 3}}},                         // size-0 output
      {"ii->i", "ii->i", {{0, 0}}},                                         // size-0 diagonal
      {"ij->", "ij->", {{0, 3}}},                                           // empty sum
      {",i->i", ",i->i", {{}, {3}}},                                        // 0-d times a vector
      {",->", ",->", {{}, {}}},                                             // 0-d times 0-d
      {"->", "->", {{}}},                                                   // 0-d alone
      {"Ij,jI->I", "Ij,jI->I", {{3, 4}, {4, 3}}},                           // batch index both sides
      // Nine indices in all, more than a tensor's 8 dims: each step holds only its operands' indices.
      {"abcde,efghi->abcdfghi", "abcde,efghi->abcdfghi", {{2, 1, 2, 1, 3}, {3, 2, 1, 2, 2}}},
  };
  return table;
}

int count_of(const std::vector<std::string>& names, const std::string& name) {
  return static_cast<int>(std::count(names.begin(), names.end(), name));
}

// The message of the error einsum(equation, operands) throws, checked to name the caller's line.
std::string einsum_error(std::string_view equation, const std::vector<Tensor>& operands,
                         Where where = Where::current()) {
  const std::string message = error_of([&] { einsum(equation, operands, where); });
  CHECK(names_line(message, static_cast<int>(where.line())));
  return message;
}

void expect_pieces(const std::string& message, const std::vector<std::string>& pieces) {
  for (const std::string& piece : pieces) {
    INFO(message, " lacks ", piece);
    CHECK(message.find(piece) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("einsum: every form matches the brute-force sum in float64 and float32") {
  for (const DType dtype : {kFloat64, kFloat32}) {
    for (const Form& form : forms()) {
      INFO(form.equation, " in ", dtype_name(dtype));
      std::vector<Tensor> operands;
      for (size_t k = 0; k < form.shapes.size(); ++k) {
        operands.push_back(small_tensor(form.shapes[k], static_cast<uint32_t>(10 + k), dtype));
      }
      const Tensor result = einsum(form.equation, operands);
      CHECK(result.dtype() == dtype);
      check_matches(result, reference_einsum(form.reference, operands), dtype == kFloat64 ? 1e-12 : 1e-5);
    }
  }
}

TEST_CASE("einsum: non-contiguous operands (transposed, strided, expanded)") {
  const Tensor transposed = small_tensor({5, 3}, 1).t();                     // [3, 5]
  const Tensor strided = small_tensor({5, 8}, 2).slice(1, 0, 8, 2);          // [5, 4]
  const Tensor expanded = small_tensor({4}, 3).unsqueeze(0).expand({3, 4});  // [3, 4], stride 0
  const Tensor square = small_tensor({4, 4}, 4).t();
  const Tensor batch = small_tensor({4, 2, 3}, 5).permute({1, 2, 0});  // [2, 3, 4]
  check_matches(einsum("ij,jk->ik", {transposed, strided}), reference_einsum("ij,jk->ik", {transposed, strided}),
                1e-12);
  check_matches(einsum("ij,ij->i", {expanded, small_tensor({3, 4}, 6)}),
                reference_einsum("ij,ij->i", {expanded, small_tensor({3, 4}, 6)}), 1e-12);
  check_matches(einsum("ii->i", {square}), reference_einsum("ii->i", {square}), 1e-12);
  const Tensor columns = small_tensor({4, 6}, 7).slice(1, 0, 6, 2);  // [4, 3]
  check_matches(einsum("bij,jk->bik", {batch, columns}), reference_einsum("bij,jk->bik", {batch, columns}), 1e-12);
  check_matches(einsum("...j,jk", {batch, columns}), reference_einsum("abj,jk->abk", {batch, columns}), 1e-12);
}

TEST_CASE("einsum: a contraction of two operands is one bmm, never a product summed afterwards") {
  const Tensor a = small_tensor({2, 3, 4}, 1);
  const Tensor b = small_tensor({2, 4, 5}, 2);
  OpNameRecorder recorder;
  {
    DispatchModeGuard installed(recorder);
    einsum("bij,bjk->bik", {a, b});
  }
  CHECK(count_of(recorder.names, "bmm") == 1);
  CHECK(count_of(recorder.names, "mul") == 0);
  CHECK(count_of(recorder.names, "sum") == 0);
  OpNameRecorder bilinear;
  {
    DispatchModeGuard installed(bilinear);
    einsum("bn,anm,bm->ba", {small_tensor({2, 3}, 3), small_tensor({4, 3, 5}, 4), small_tensor({2, 5}, 5)});
  }
  CHECK(count_of(bilinear.names, "bmm") == 2);
  CHECK(count_of(bilinear.names, "sum") == 0);
}

TEST_CASE("einsum: gradients match finite differences") {
  gradcheck_leaves(
      [](const std::vector<Tensor>& x) {
        return einsum("ij,jk->ik", {x[0], x[1]});
      },
      {leaf({3, 4}, 1), leaf({4, 2}, 2)});
  gradcheck_leaves(
      [](const std::vector<Tensor>& x) {
        return einsum("bn,anm,bm->ba", {x[0], x[1], x[2]});
      },
      {leaf({2, 3}, 3), leaf({4, 3, 2}, 4), leaf({2, 2}, 5)});
  gradcheck_leaves(
      [](const std::vector<Tensor>& x) {
        return einsum("iij,jk->ik", {x[0], x[1]});
      },
      {leaf({3, 3, 2}, 6), leaf({2, 4}, 7)});
  gradcheck_leaves([](const std::vector<Tensor>& x) { return einsum("ii", {x[0].t()}); }, {leaf({4, 4}, 8)});
  gradcheck_leaves(
      [](const std::vector<Tensor>& x) {
        return einsum("...ij,...jk->...ik", {x[0], x[1]});
      },
      {leaf({2, 1, 3, 2}, 9), leaf({3, 2, 2}, 10)});
}

TEST_CASE("einsum: every error names einsum, the equation, the operand and the caller's line") {
  const Tensor matrix = small_tensor({3, 4}, 1);
  const Tensor other = small_tensor({5, 6}, 2);
  const Tensor square = small_tensor({3, 3}, 3);
  expect_pieces(einsum_error("ij,jk->ik", {matrix}),
                {"einsum: equation 'ij,jk->ik' has subscripts for 2 operand(s) but 1 were given"});
  expect_pieces(einsum_error("i", {}), {"einsum: equation 'i' has subscripts for 1 operand(s) but 0"});
  expect_pieces(einsum_error("ij,ijk->i", {matrix, matrix}),
                {"einsum: operand 1 has 2 dims but 3 subscripts 'ijk'", "shape [3, 4]", "equation 'ij,ijk->i'"});
  expect_pieces(einsum_error("...ijk->i", {matrix}),
                {"einsum: operand 0 has 2 dims, fewer than the 3 subscripts '...ijk'", "equation '...ijk->i'"});
  expect_pieces(einsum_error("i#->i", {matrix}), {"einsum: invalid character '#' at position 1 of equation 'i#->i'"});
  expect_pieces(einsum_error("ij->i,j", {matrix}),
                {"einsum: invalid character ',' at position 5 of equation 'ij->i,j'"});
  expect_pieces(einsum_error("ij-i", {matrix}), {"invalid character '-' at position 2 of equation 'ij-i'"});
  expect_pieces(einsum_error("i.j->i", {matrix}),
                {"einsum: the '.' at position 1 of equation 'i.j->i' is not part of '...'"});
  expect_pieces(einsum_error("ij->k", {matrix}),
                {"einsum: output subscript 'k' appears in no operand of equation 'ij->k'"});
  expect_pieces(einsum_error("ij->ii", {matrix}),
                {"einsum: output subscript 'i' appears more than once in the output of equation 'ij->ii'"});
  expect_pieces(einsum_error("ij,jk->ik", {matrix, other}),
                {"einsum: subscript 'j' has size 4 in operand 0 but 5 in operand 1", "shapes [3, 4] and [5, 6]",
                 "equation 'ij,jk->ik'"});
  expect_pieces(einsum_error("...i,...i->...", {small_tensor({2, 3}, 4), small_tensor({4, 3}, 5)}),
                {"einsum: dim 0 of '...' has size 2 in operand 0 but 4 in operand 1", "equation '...i,...i->...'"});
  expect_pieces(
      einsum_error("ii->i", {matrix}),
      {"einsum: subscript 'i' is repeated in operand 0 over dims 0 and 1 of sizes 3 and 4", "equation 'ii->i'"});
  expect_pieces(einsum_error("......->", {matrix}),
                {"einsum: operand 0 has more than one '...' in equation '......->'"});
  expect_pieces(einsum_error("i...->......", {matrix}),
                {"einsum: the output has more than one '...' in equation 'i...->......'"});
  expect_pieces(einsum_error("ij->ij->ij", {matrix}),
                {"einsum: equation 'ij->ij->ij' has '->' more than once (at positions 2 and 6)"});
  expect_pieces(einsum_error("ij,jk->ik", {square, square.to(kFloat32)}),
                {"einsum: operand 1 has dtype float32 but operand 0 has float64", "equation 'ij,jk->ik'"});
  expect_pieces(einsum_error("ij,jk->ik", {square, Tensor()}),
                {"einsum: operand 1 of equation 'ij,jk->ik' is an undefined tensor"});
}

TEST_CASE("tensordot: matches the brute-force sum") {
  const Tensor a = small_tensor({2, 3, 4}, 1);
  const Tensor b = small_tensor({3, 4, 5}, 2);
  check_matches(tensordot(a, b, 2), reference_einsum("abc,bcd->ad", {a, b}), 1e-12);
  check_matches(tensordot(a, b, 0), reference_einsum("abc,def->abcdef", {a, b}), 1e-12);
  const Tensor c = small_tensor({4, 5, 3}, 3);
  check_matches(tensordot(a, c, {1, 2}, {2, 0}), reference_einsum("abc,cdb->ad", {a, c}), 1e-12);
  check_matches(tensordot(a, c, {-1, -2}, {0, -1}), reference_einsum("abc,cdb->ad", {a, c}), 1e-12);
  // A size-1 dim broadcasts against the other's, as torch.tensordot sums the other along it.
  const Tensor one = small_tensor({1, 5}, 4);
  check_matches(tensordot(a, one, {1}, {0}), reference_einsum("abc,bd->acd", {a, one}), 1e-12);
  check_matches(tensordot(one, a, {0}, {1}), reference_einsum("bd,abc->dac", {one, a}), 1e-12);
  const Tensor strided = small_tensor({5, 8}, 5).slice(1, 0, 8, 2).t();  // [4, 5]
  check_matches(tensordot(a, strided, 1), reference_einsum("abc,cd->abd", {a, strided}), 1e-12);
  const Tensor empty = small_tensor({0, 4}, 6);
  check_matches(tensordot(empty, small_tensor({4, 2}, 7), 1),
                reference_einsum("ab,bc->ac", {empty, small_tensor({4, 2}, 7)}), 1e-12);
  check_matches(tensordot(a.to(kFloat32), b.to(kFloat32), 2), reference_einsum("abc,bcd->ad", {a, b}), 1e-5);
  gradcheck_leaves(
      [](const std::vector<Tensor>& x) {
        return tensordot(x[0], x[1], {0, 2}, {1, 0});
      },
      {leaf({2, 3, 2}, 8), leaf({2, 2, 3}, 9)});
}

TEST_CASE("tensordot: errors name tensordot, the dims, the shapes and the caller's line") {
  const Tensor a = small_tensor({2, 3}, 1);
  const Tensor b = small_tensor({4, 5}, 2);
  const Tensor square = small_tensor({2, 2}, 3);
  // The message of the error `call` throws, checked to name the line that made the call.
  const auto error_at = [](const std::function<void(Where)>& call, Where where = Where::current()) {
    const std::string message = error_of([&] { call(where); });
    CHECK(names_line(message, static_cast<int>(where.line())));
    return message;
  };
  expect_pieces(
      error_at([&](Where where) { tensordot(a, b, 1, where); }),
      {"tensordot: contracted dims differ in size: dim 1 of a has 3, dim 0 of b has 4", "shapes [2, 3] and [4, 5]"});
  expect_pieces(error_at([&](Where where) { tensordot(a, b, -1, where); }), {"tensordot: expects dims >= 0, got -1"});
  expect_pieces(error_at([&](Where where) { tensordot(a, b, 3, where); }),
                {"tensordot: cannot contract 3 dims of tensors of shapes [2, 3] and [4, 5]"});
  expect_pieces(error_at([&](Where where) {
                  tensordot(a, b, {0, 1}, {0}, where);
                }),
                {"tensordot: dims_a [0, 1] and dims_b [0] must list as many dims"});
  expect_pieces(error_at([&](Where where) {
                  tensordot(a, square, {0, -2}, {0, 1}, where);
                }),
                {"tensordot: dim 0 of a appears more than once in dims_a [0, -2]"});
  expect_pieces(error_at([&](Where where) {
                  tensordot(a, small_tensor({3, 3}, 4), {1, 1}, {0, 1}, where);
                }),
                {"tensordot: dim 1 of a appears more than once in dims_a [1, 1]"});
  expect_pieces(error_at([&](Where where) { tensordot(a, b, {2}, {0}, where); }), {"tensordot", "2"});
  expect_pieces(error_at([&](Where where) { tensordot(a, b.to(kFloat32), 0, where); }),
                {"tensordot: expected operands of one dtype, got float64 and float32"});
}

}  // namespace test_einsum
