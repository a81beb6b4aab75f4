// nn::init edges, against PyTorch's rules: initialising a zero-element tensor is a no-op.
#include <doctest/doctest.h>

#include <vector>

#include "runtime/ember.h"

using namespace ember;

TEST_CASE("initialising a zero-element tensor is a no-op, as torch.nn.init's is") {
  const std::vector<Dims> shapes{{4, 0, 3}, {4, 0}, {0, 4}, {0, 0}, {0}};
  for (size_t i = 0; i < shapes.size(); ++i) {
    CAPTURE(i);
    Tensor tensor = empty(shapes[i]);
    CHECK(nn::init::uniform_(tensor, -1.0, 1.0).is_same(tensor));
    CHECK(nn::init::normal_(tensor).is_same(tensor));
    CHECK(nn::init::constant_(tensor, 2.0).is_same(tensor));
    // torch returns before computing the fans; one-dimensional tensors have none.
    CHECK(nn::init::kaiming_uniform_(tensor).is_same(tensor));
    CHECK(nn::init::kaiming_normal_(tensor, 0.0, nn::init::FanMode::FanOut).is_same(tensor));
    CHECK(nn::init::xavier_uniform_(tensor).is_same(tensor));
    CHECK(nn::init::xavier_normal_(tensor).is_same(tensor));
    CHECK(tensor.numel() == 0);
  }
  // A tensor with elements still needs two dims for its fans.
  CHECK_THROWS_WITH_AS(nn::init::kaiming_uniform_(empty({3})),
                       doctest::Contains("nn::init::kaiming_uniform_: fan in and fan out need a tensor with at least 2 "
                                         "dims, got shape [3]"),
                       Error);
}
