// F::max_unpool1d/2d/3d and nn::MaxUnpool1d/2d/3d against float64 loops that write each value at
// its index in order (PyTorch's CPU loop): round trips from max_pool, output_size, repeated indices,
// finite-difference gradients, every refusal with its call site, and the modules' reprs.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "pool_reference.h"
#include "runtime/ember.h"

namespace test_nn_max_unpool {

using namespace ember;
using ember::testing::error_of;
using ember::testing::gradcheck_leaves;
using ember::testing::leaf;
using ember::testing::PoolGeometry;
using ember::testing::small_tensor;
using ember::testing::values_of;
namespace F = ember::nn::functional;

namespace {

Tensor int64s(const std::vector<int64_t>& values, const Dims& sizes) {
  return from_vector<int64_t>(values, sizes, {.dtype = kInt64});
}

// Per plane, output[plane][indices[i]] = input[i] for i in order (the last write wins), else 0.
std::vector<double> reference_unpool(const std::vector<double>& input, const std::vector<int64_t>& indices,
                                     int64_t planes, int64_t output_plane) {
  const int64_t length = static_cast<int64_t>(input.size()) / planes;
  std::vector<double> output(static_cast<size_t>(planes * output_plane), 0.0);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t i = 0; i < length; ++i) output[p * output_plane + indices[p * length + i]] = input[p * length + i];
  return output;
}

Tensor unpool(int spatial, const Tensor& input, const Tensor& indices, SpatialDims kernel,
              F::MaxUnpoolOptions options = {}, std::optional<Dims> output_size = std::nullopt) {
  if (spatial == 1) return F::max_unpool1d(input, indices, kernel, options, output_size);
  if (spatial == 2) return F::max_unpool2d(input, indices, kernel, options, output_size);
  return F::max_unpool3d(input, indices, kernel, options, output_size);
}

}  // namespace

TEST_CASE("max_unpool2d writes each value at its index and zeros elsewhere") {
  // [2, 3, 2, 3] pooled with kernel 2: the default output is (2 - 1) 2 + 2 = 4 by (3 - 1) 2 + 2 = 6.
  const Tensor input = small_tensor({2, 3, 2, 3}, 7);
  std::vector<int64_t> positions;
  for (int64_t plane = 0; plane < 6; ++plane)
    for (int64_t i = 0; i < 6; ++i) positions.push_back((i * 7 + plane * 5) % 24);  // distinct per plane
  const Tensor output = F::max_unpool2d(input, int64s(positions, {2, 3, 2, 3}), 2);
  CHECK(output.sizes() == Dims{2, 3, 4, 6});
  CHECK(output.dtype() == kFloat64);
  CHECK(values_of(output) == reference_unpool(values_of(input), positions, 6, 24));
}

TEST_CASE("max_pool then max_unpool puts each maximum back at its position in 1-D, 2-D and 3-D") {
  struct Case {
    int spatial;
    Dims sizes;
    PoolGeometry geometry;
  };
  const std::vector<Case> cases = {
      {1, {2, 3, 8}, {.kernel = {2}, .stride = {}, .padding = {0}, .dilation = {1}}},
      {1, {3, 7}, {.kernel = {3}, .stride = {2}, .padding = {1}, .dilation = {1}}},  // unbatched
      {2, {2, 2, 4, 6}, {.kernel = {2}, .stride = {}, .padding = {0}, .dilation = {1}}},
      {2, {1, 3, 5, 4}, {.kernel = {3, 2}, .stride = {2, 2}, .padding = {1, 0}, .dilation = {1}}},
      {3, {1, 2, 4, 4, 6}, {.kernel = {2}, .stride = {}, .padding = {0}, .dilation = {1}}},
      {3, {2, 4, 2, 6}, {.kernel = {2, 1, 3}, .stride = {2, 1, 3}, .padding = {0}, .dilation = {1}}},
  };
  for (const Case& c : cases) {
    INFO(fmt::format("spatial {}, input {}", c.spatial, c.sizes));
    const Tensor input = small_tensor(c.sizes, 11);
    const testing::ReferencePool pooled = testing::reference_max_pool(input, c.spatial, c.geometry);
    const testing::PoolLayout layout = testing::pool_layout(c.sizes, c.spatial, c.geometry);
    const MaxPoolOptions pool_options{.stride = c.geometry.stride, .padding = c.geometry.padding};
    const auto [values, indices] = c.spatial == 1   ? max_pool1d_with_indices(input, c.geometry.kernel, pool_options)
                                   : c.spatial == 2 ? max_pool2d_with_indices(input, c.geometry.kernel, pool_options)
                                                    : max_pool3d_with_indices(input, c.geometry.kernel, pool_options);
    REQUIRE(indices.contiguous().to_vector<int64_t>() == pooled.indices);
    // output_size = the input's spatial sizes, which the default may miss (7 pooled by 3 with stride 2).
    Dims spatial_sizes;
    for (int d = c.sizes.size() - c.spatial; d < c.sizes.size(); ++d) spatial_sizes.push_back(c.sizes[d]);
    const F::MaxUnpoolOptions unpool_options{.stride = c.geometry.stride, .padding = c.geometry.padding};
    const Tensor restored = unpool(c.spatial, values, indices, c.geometry.kernel, unpool_options, spatial_sizes);
    CHECK(restored.sizes() == c.sizes);
    // Reference: the input's value at every chosen position (chosen twice when windows overlap), zero elsewhere.
    const std::vector<double> x = values_of(input);
    const int64_t plane = layout.plane_size();
    std::vector<double> expected(x.size(), 0.0);
    const int64_t per_plane = static_cast<int64_t>(pooled.indices.size()) / layout.planes;
    for (size_t i = 0; i < pooled.indices.size(); ++i) {
      const int64_t at = static_cast<int64_t>(i) / per_plane * plane + pooled.indices[i];
      expected[at] = x[at];
    }
    CHECK(values_of(restored) == expected);
  }
}

TEST_CASE("max_unpool output_size picks a size within a stride of the default, with or without N and C") {
  const Tensor input = small_tensor({1, 1, 5, 5}, 3);
  const auto [values, indices] = max_pool2d_with_indices(input, 2);  // 2 x 2 windows of rows/cols 0..3
  CHECK(F::max_unpool2d(values, indices, 2).sizes() == Dims{1, 1, 4, 4});
  CHECK(F::max_unpool2d(values, indices, 2, {}, Dims{5, 5}).sizes() == Dims{1, 1, 5, 5});
  CHECK(F::max_unpool2d(values, indices, 2, {}, Dims{1, 1, 5, 3}).sizes() == Dims{1, 1, 5, 3});
  // With 5 columns the flat indices of a 5 x 5 plane land where the maxima came from.
  const Tensor restored = F::max_unpool2d(values, indices, 2, {}, Dims{5, 5});
  const std::vector<double> x = values_of(input), y = values_of(restored);
  for (int64_t index : indices.contiguous().to_vector<int64_t>()) CHECK(y[index] == x[index]);
  const std::string too_big = error_of([&] { F::max_unpool2d(values, indices, 2, {}, Dims{6, 5}); });
  CHECK(too_big.find("max_unpool2d: invalid output_size [6, 5] (dim 0 must be between 2 and 6)") != std::string::npos);
  const std::string too_small = error_of([&] { F::max_unpool2d(values, indices, 2, {}, Dims{4, 2}); });
  CHECK(too_small.find("(dim 1 must be between 2 and 6)") != std::string::npos);
  const std::string length = error_of([&] { F::max_unpool2d(values, indices, 2, {}, Dims{1, 4, 4}); });
  CHECK(length.find("output_size should be a sequence containing 2 or 4 elements, but it has a length of '3'") !=
        std::string::npos);
}

TEST_CASE("max_unpool writes a repeated index once: the last value written wins") {
  // Overlapping windows (kernel 3, stride 1) choose the same maximum twice: its value, not twice it.
  const Tensor input = testing::doubles({0.5, 2.0, -1.0, 0.25, 1.5}, {1, 1, 5});
  const auto [values, indices] = max_pool1d_with_indices(input, 3, {.stride = 1});
  CHECK(indices.contiguous().to_vector<int64_t>() == std::vector<int64_t>{1, 1, 4});
  CHECK(values_of(F::max_unpool1d(values, indices, 3, {.stride = 1})) == std::vector<double>{0.0, 2.0, 0.0, 0.0, 1.5});
  // Different values at one index (an unpool of other features): the later one, as PyTorch's CPU loop.
  const Tensor features = testing::doubles({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, {2, 3});  // unbatched [C, L]
  const std::vector<int64_t> repeated = {3, 0, 3, 1, 1, 1};
  const Tensor output = F::max_unpool1d(features, int64s(repeated, {2, 3}), 2);  // default length (3 - 1) 2 + 2 = 6
  CHECK(values_of(output) == reference_unpool(values_of(features), repeated, 2, 6));
  CHECK(values_of(output) == std::vector<double>{2, 0, 0, 3, 0, 0, 0, 6, 0, 0, 0, 0});
}

TEST_CASE("max_unpool gradients match central differences, duplicates included") {
  const Tensor distinct = int64s({5, 0, 2, 7, 3, 6, 1, 4}, {1, 2, 2, 2});  // 2 planes of 4 into 4 x 4 = 16
  gradcheck_leaves([&](const std::vector<Tensor>& in) { return F::max_unpool2d(in[0], distinct, 2); },
            {leaf({1, 2, 2, 2}, 21)});
  // The loser of a repeated index gets no gradient: its value never reaches the output.
  const Tensor repeated = int64s({2, 2, 0, 3, 3, 3}, {2, 3});
  gradcheck_leaves([&](const std::vector<Tensor>& in) { return F::max_unpool1d(in[0], repeated, 2); },
                   {leaf({2, 3}, 22)});
  const Tensor cube = int64s({7, 0, 5, 2, 1, 6, 3, 4}, {1, 1, 2, 2, 2});  // kernel 1: into 2 x 2 x 2
  gradcheck_leaves([&](const std::vector<Tensor>& in) { return F::max_unpool3d(in[0], cube, 1); },
            {leaf({1, 1, 2, 2, 2}, 23)});
}

TEST_CASE("max_unpool keeps an empty batch and the input's dtype") {
  const Tensor empty = zeros({0, 2, 2, 2}, {.dtype = kFloat32});
  const Tensor none = zeros({0, 2, 2, 2}, {.dtype = kInt64});
  CHECK(F::max_unpool2d(empty, none, 2).sizes() == Dims{0, 2, 4, 4});
  const Tensor floats = from_vector<float>({1.5f, -2.0f}, {1, 2}, {.dtype = kFloat32});
  const Tensor out = F::max_unpool1d(floats, int64s({3, 0}, {1, 2}), 2);
  CHECK(out.dtype() == kFloat32);
  CHECK(out.to_vector<float>() == std::vector<float>{-2.0f, 0.0f, 0.0f, 1.5f});
}

TEST_CASE("max_unpool refuses bad arguments, naming the op, the values and the call site") {
  const Tensor input = small_tensor({1, 1, 2, 2}, 5);
  const Tensor indices = int64s({0, 3, 8, 15}, {1, 1, 2, 2});
  const Tensor too_high = int64s({0, 3, 16, 1}, {1, 1, 2, 2}), negative = int64s({0, -1, 2, 1}, {1, 1, 2, 2});
  const Tensor no_channels = zeros({1, 0, 2, 2}), no_indices = zeros({1, 0, 2, 2}, {.dtype = kInt64});
  const Tensor one = small_tensor({1, 1}, 3), one_index = int64s({0}, {1, 1});
  // One call per line: check_messages_name_lines counts them.
  // clang-format off
  const std::vector<std::string> messages = {
      error_of([&] { F::max_unpool2d(input, indices.to(kInt32), 2); }),
      error_of([&] { F::max_unpool2d(input.reshape({4}), indices.reshape({4}), 2); }),
      error_of([&] { F::max_unpool2d(input, indices.reshape({1, 1, 4, 1}), 2); }),
      error_of([&] { F::max_unpool2d(input, too_high, 2); }),
      error_of([&] { F::max_unpool2d(input, negative, 2); }),
      error_of([&] { F::max_unpool2d(input, indices, {2, 2, 2}); }),
      error_of([&] { F::max_unpool2d(input, indices, 2, {.stride = 0}); }),
      error_of([&] { F::max_unpool3d(input.reshape({1, 4}), indices.reshape({1, 4}), 2); }),
      error_of([&] { F::max_unpool2d(no_channels, no_indices, 2); }),
      error_of([&] { F::max_unpool1d(one, one_index, 1, {.padding = 1}); }),
  };
  // clang-format on
  const int first_line = __LINE__ - 12;
  testing::check_messages_name_lines(
      messages,
      {"max_unpool2d: elements in indices should be type int64 but got: int32",
       "max_unpool2d: expected a 3-D (unbatched) or 4-D (batched) input, got shape [4]",
       "max_unpool2d: Expected shape of indices to be same as that of the input tensor ([1, 1, 2, 2]) but got indices "
       "tensor with shape: [1, 1, 4, 1]",
       "max_unpool2d: Found an invalid max index: 16 (output volumes are of size 4x4)",
       "max_unpool2d: Found an invalid max index: -1 (output volumes are of size 4x4)",
       "max_unpool2d: kernel_size must have 1 or 2 values, got [2, 2, 2]",
       "max_unpool2d: strides should be greater than zero, but got stride: [0, 0]",
       "max_unpool3d: expected a 4-D (unbatched) or 5-D (batched) input, got shape [1, 4]",
       "max_unpool2d: Expected input to have non-zero size for non-batch dimensions, but got [1, 0, 2, 2] with "
       "dimension 1 being empty",
       "max_unpool1d: the output size [-1] is not positive"},
      first_line);
}

TEST_CASE("nn::MaxUnpool1d, 2d and 3d call the functions and print as torch.nn's") {
  nn::MaxUnpool2d unpool(2);
  CHECK(unpool->str() == "MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))");
  CHECK(nn::MaxUnpool1d(3, {.stride = 2, .padding = 1})->str() ==
        "MaxUnpool1d(kernel_size=(3,), stride=(2,), padding=(1,))");
  CHECK(nn::MaxUnpool3d({2, 1, 2})->str() == "MaxUnpool3d(kernel_size=(2, 1, 2), stride=(2, 1, 2), padding=(0, 0, 0))");
  const Tensor input = small_tensor({2, 1, 4, 4}, 9);
  const auto [values, indices] = max_pool2d_with_indices(input, 2);
  CHECK(values_of(unpool(values, indices)) == values_of(F::max_unpool2d(values, indices, 2)));
  // A 4 x 5 plane pools to the same 2 x 2: its indices need output_size, else the default 4 x 4
  // refuses them (index 18 of a 4 x 5 plane is past 4 x 4).
  const auto [wide_values, wide_indices] = max_pool2d_with_indices(small_tensor({2, 1, 4, 5}, 10), 2);
  CHECK(unpool->forward(wide_values, wide_indices, Dims{4, 5}).sizes() == Dims{2, 1, 4, 5});
  const std::string message = error_of([] { nn::MaxUnpool2d({1, 2, 3}); });
  CHECK(message.find("MaxUnpool2d: kernel_size must have 1 or 2 values, got [1, 2, 3]") != std::string::npos);
}

}  // namespace test_nn_max_unpool
