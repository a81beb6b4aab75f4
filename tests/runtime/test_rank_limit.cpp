// ember tensors have at most Dims::kMaxRank (8) dims. Going past it is an error that names the op
// that would have made the larger tensor, or the user's line that wrote the shape.
#include <doctest/doctest.h>

#include <vector>

#include "runtime/ember.h"
#include "tests/error_of.h"

namespace test_rank_limit {

using namespace ember;
using testing::error_of;
using testing::names_line;

namespace {

const Tensor& rank8() {
  static const Tensor tensor = zeros({1, 1, 1, 1, 1, 1, 1, 2}, {.dtype = kFloat32, .device = kCPU});
  return tensor;
}

}  // namespace

TEST_CASE("ops that add a dim name themselves when the result would pass the rank limit") {
  CHECK_THROWS_WITH_AS(rank8().unsqueeze(0), doctest::Contains("unsqueeze: the result would have 9 dims"), Error);
  CHECK_THROWS_WITH_AS(stack({rank8(), rank8()}, 0), doctest::Contains("stack: the result would have 9 dims"), Error);
  const Tensor weight = zeros({3, 4}, {.dtype = kFloat32, .device = kCPU});
  const Tensor indices = zeros({1, 1, 1, 1, 1, 1, 1, 2}, {.dtype = kInt64, .device = kCPU});
  CHECK_THROWS_WITH_AS(
      embedding(weight, indices),
      doctest::Contains("embedding: the result would have 9 dims (input shape [1, 1, 1, 1, 1, 1, 1, 2])"), Error);
  CHECK_THROWS_WITH_AS(one_hot(indices, 3), doctest::Contains("one_hot: the result would have 9 dims"), Error);
  // Rank 8 itself is fine.
  CHECK(rank8().squeeze(0).unsqueeze(0).sizes() == rank8().sizes());
}

TEST_CASE("a shape of more dims than the limit names the line that wrote it") {
  const int line = __LINE__ + 1;
  const std::string message = error_of([] { (void)rank8().view({1, 1, 1, 1, 1, 1, 1, 1, 2}); });
  CHECK(message.find("a shape of 9 dims was given: ember tensors have at most 8 dimensions") != std::string::npos);
  CHECK(names_line(message, line));
  const std::vector<int64_t> nine(9, 1);
  CHECK_THROWS_WITH_AS(zeros(nine), doctest::Contains("a shape of 9 dims was given"), Error);
}

}  // namespace test_rank_limit
