// What the nn-layer tests share (test_nn_layers_more.cpp, test_nn_padding_bilinear_init.cpp): values
// within a relative tolerance, and a module's state_dict keys.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "runtime/ember.h"

namespace ember::testing::nn_layers {

inline void check_close(const std::vector<double>& actual, const std::vector<double>& expected,
                        double tolerance = 1e-12) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO("element ", i, ": ", actual[i], " vs ", expected[i]);
    CHECK(std::abs(actual[i] - expected[i]) <= tolerance * (1.0 + std::abs(expected[i])));
  }
}

inline std::vector<std::string> keys_of(const nn::Module& module) { return module.state_dict().keys(); }

}  // namespace ember::testing::nn_layers
