// The strong Wolfe line search of LBFGS: a bracketing phase, then a zoom phase (the algorithm and
// its constants as in PyTorch's torch/optim/lbfgs.py, so that iterates match it step for step).
#include "runtime/optim/lbfgs_line_search.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "runtime/dispatch.h"

namespace ember::optim::detail {

double host_scalar(const char* what, const Tensor& tensor) {
  notify_host_read(what, tensor);
  return tensor.item();
}

double cubic_interpolate(double x1, double f1, double g1, double x2, double f2, double g2,
                         std::optional<std::pair<double, double>> bounds) {
  const auto [low, high] = bounds ? *bounds : (x1 <= x2 ? std::pair{x1, x2} : std::pair{x2, x1});
  // The cubic's stationary points: d1 and d2 as in Nocedal & Wright (3.59).
  const double d1 = g1 + g2 - 3.0 * (f1 - f2) / (x1 - x2);
  const double d2_square = d1 * d1 - g1 * g2;
  if (!(d2_square >= 0.0)) return (low + high) / 2.0;
  const double d2 = std::sqrt(d2_square);
  const double minimum = x1 <= x2 ? x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2.0 * d2))
                                  : x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2.0 * d2));
  return std::min(std::max(minimum, low), high);
}

namespace {

// One trial step: its length, loss, flat gradient and directional derivative.
struct Trial {
  double t = 0.0;
  double f = 0.0;
  Tensor g;
  double gtd = 0.0;
};

double directional_derivative(const Tensor& g, const Tensor& d) {
  return host_scalar("LBFGS line search: grad.dot(d)", g.dot(d));
}

}  // namespace

LineSearchResult strong_wolfe(const DirectionalObjective& objective, double t, const Tensor& d, double f,
                              const Tensor& g, double gtd, double tolerance_change, double c1, double c2,
                              int64_t max_ls) {
  const double d_norm = host_scalar("LBFGS line search: d.abs().max()", d.abs().max());
  auto evaluate = [&](double step) {
    auto [loss, grad] = objective(step);
    const double slope = directional_derivative(grad, d);
    return Trial{step, loss, std::move(grad), slope};
  };
  const Trial start{0.0, f, g, gtd};
  Trial current = evaluate(t);
  int64_t evaluations = 1;
  auto armijo_fails = [&](const Trial& trial) { return trial.f > f + c1 * trial.t * gtd; };
  auto curvature_holds = [&](const Trial& trial) { return std::abs(trial.gtd) <= -c2 * gtd; };

  // Bracketing: grow t until [previous, current] must hold a point meeting the conditions, or
  // current meets them itself.
  std::array<Trial, 2> bracket;
  size_t bracket_size = 0;
  bool done = false;
  Trial previous = start;
  int64_t iteration = 0;
  while (iteration < max_ls) {
    // The checks in PyTorch's order: a trial meeting the curvature condition with a positive
    // slope ends the search, it does not bracket.
    if (armijo_fails(current) || (iteration > 1 && current.f >= previous.f)) {
      bracket = {previous, current};
      bracket_size = 2;
      break;
    }
    if (curvature_holds(current)) {
      bracket[0] = current;
      bracket_size = 1;
      done = true;
      break;
    }
    if (current.gtd >= 0.0) {  // the slope turned: a minimum lies between previous and current
      bracket = {previous, current};
      bracket_size = 2;
      break;
    }
    // Extrapolate, at least 1% past t and at most 10 t.
    const double next = cubic_interpolate(previous.t, previous.f, previous.gtd, current.t, current.f, current.gtd,
                                          std::pair{current.t + 0.01 * (current.t - previous.t), current.t * 10.0});
    previous = current;
    current = evaluate(next);
    ++evaluations;
    ++iteration;
  }
  if (iteration == max_ls) {  // out of evaluations: the better of the start and the last trial
    bracket = {start, current};
    bracket_size = 2;
  }

  // Zoom: shrink the bracket around the point meeting the conditions. `low` is the end with the
  // lower loss (the first on ties), `high` the other.
  size_t low = 0, high = 1;
  if (bracket_size == 2 && bracket[0].f > bracket[1].f) std::swap(low, high);
  bool insufficient_progress = false;
  while (!done && iteration < max_ls) {
    if (std::abs(bracket[1].t - bracket[0].t) * d_norm < tolerance_change) break;  // the bracket is too small
    double trial_t =
        cubic_interpolate(bracket[0].t, bracket[0].f, bracket[0].gtd, bracket[1].t, bracket[1].f, bracket[1].gtd);
    // A trial within 10% of the bracket's length from an end makes little progress: the second
    // time in a row, or when it lies at or past an end, move it to 10% inside the nearer end.
    const double top = std::max(bracket[0].t, bracket[1].t);
    const double bottom = std::min(bracket[0].t, bracket[1].t);
    const double margin = 0.1 * (top - bottom);
    if (std::min(top - trial_t, trial_t - bottom) < margin) {
      if (insufficient_progress || trial_t >= top || trial_t <= bottom) {
        trial_t = std::abs(trial_t - top) < std::abs(trial_t - bottom) ? top - margin : bottom + margin;
        insufficient_progress = false;
      } else {
        insufficient_progress = true;
      }
    } else {
      insufficient_progress = false;
    }
    Trial trial = evaluate(trial_t);
    ++evaluations;
    ++iteration;
    if (armijo_fails(trial) || trial.f >= bracket[low].f) {
      // Not lower than the low end: the trial becomes the high end.
      bracket[high] = std::move(trial);
      low = bracket[0].f <= bracket[1].f ? 0 : 1;
      high = 1 - low;
    } else {
      if (curvature_holds(trial)) {
        done = true;
      } else if (trial.gtd * (bracket[high].t - bracket[low].t) >= 0.0) {
        bracket[high] = bracket[low];  // the slope points back past the low end: it becomes the high end
      }
      bracket[low] = std::move(trial);
    }
  }
  const Trial& chosen = bracket[low];
  return {chosen.f, chosen.g, chosen.t, evaluations};
}

}  // namespace ember::optim::detail
