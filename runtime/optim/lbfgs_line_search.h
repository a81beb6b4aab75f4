// The strong Wolfe line search LBFGS uses (PyTorch's _strong_wolfe and _cubic_interpolate, after
// minFunc and Nocedal & Wright's Algorithm 3.5 / 3.6), on host scalars: the loss and the
// directional derivatives are read to the host as PyTorch's comparisons do.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>

#include "runtime/tensor.h"

namespace ember::optim::detail {

// The minimizer of the cubic through (x1, f1) and (x2, f2) with slopes g1 and g2, clamped to
// `bounds` (default: the interval between x1 and x2); the middle of the bounds when the cubic has
// no minimum (its discriminant is negative).
double cubic_interpolate(double x1, double f1, double g1, double x2, double f2, double g2,
                         std::optional<std::pair<double, double>> bounds = std::nullopt);

// The loss and flat gradient at x + t * d; the parameters are back at x afterwards.
using DirectionalObjective = std::function<std::pair<double, Tensor>(double t)>;

struct LineSearchResult {
  double loss;       // at the chosen step
  Tensor flat_grad;  // at the chosen step
  double t;          // the chosen step length
  int64_t evaluations;
};

// Finds t along the descent direction d from x (loss f, flat gradient g, g . d = gtd < 0) that
// meets the strong Wolfe conditions
//   f(x + t d) <= f + c1 t gtd   and   |grad(x + t d) . d| <= -c2 gtd,
// first bracketing such a t (growing it by cubic extrapolation), then zooming into the bracket by
// cubic interpolation, with at most max_ls evaluations past the first.
LineSearchResult strong_wolfe(const DirectionalObjective& objective, double t, const Tensor& d, double f,
                              const Tensor& g, double gtd, double tolerance_change, double c1 = 1e-4, double c2 = 0.9,
                              int64_t max_ls = 25);

// `tensor`'s one value on the host, telling a compile capture that `what` reads it (a graph break
// named after the reader, which fullgraph refuses).
double host_scalar(const char* what, const Tensor& tensor);

}  // namespace ember::optim::detail
