// A float64 host reference of PyTorch's LBFGS (torch/optim/lbfgs.py: step, _strong_wolfe,
// _cubic_interpolate), written on std::vector<double> line by line from the Python, so that
// optim::LBFGS's iterates can be compared with it; and the Rosenbrock function with its gradient.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <functional>
#include <utility>
#include <vector>

namespace ember::lbfgs_reference {

using Vec = std::vector<double>;
struct Eval {
  double f;
  Vec g;
};
using Function = std::function<Eval(const Vec&)>;

inline double dot(const Vec& a, const Vec& b) {
  double sum = 0.0;
  for (size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
  return sum;
}
inline Vec add(const Vec& x, double t, const Vec& d) {  // x + t * d
  Vec out(x);
  for (size_t i = 0; i < x.size(); ++i) out[i] += t * d[i];
  return out;
}
inline double max_abs(const Vec& v) {
  double m = 0.0;
  for (double e : v) m = std::max(m, std::abs(e));
  return m;
}

// (1 - x)^2 + 100 (y - x^2)^2, minimum 0 at (1, 1).
inline Eval rosenbrock(const Vec& p) {
  const double a = 1.0 - p[0], b = p[1] - p[0] * p[0];
  return {a * a + 100.0 * b * b, {-2.0 * a - 400.0 * p[0] * b, 200.0 * b}};
}

inline double cubic(double x1, double f1, double g1, double x2, double f2, double g2, const double* bounds) {
  const double lo = bounds ? bounds[0] : std::min(x1, x2), hi = bounds ? bounds[1] : std::max(x1, x2);
  const double d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2);
  const double d2_square = d1 * d1 - g1 * g2;
  if (d2_square < 0) return (lo + hi) / 2.0;
  const double d2 = std::sqrt(d2_square);
  const double min_pos = x1 <= x2 ? x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
                                  : x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2));
  return std::min(std::max(min_pos, lo), hi);
}

struct WolfeResult {
  double f;
  Vec g;
  double t;
  int evals;
};

inline WolfeResult strong_wolfe(const Function& fn, const Vec& x, double t, const Vec& d, double f, const Vec& g,
                                double gtd, double tolerance_change, double c1 = 1e-4, double c2 = 0.9,
                                int max_ls = 25) {
  const double d_norm = max_abs(d);
  Eval e = fn(add(x, t, d));
  double f_new = e.f, gtd_new = dot(e.g, d);
  Vec g_new = e.g;
  int evals = 1, ls_iter = 0;
  double t_prev = 0, f_prev = f, gtd_prev = gtd;
  Vec g_prev = g;
  bool done = false;
  std::array<double, 2> b{}, bf{}, bgtd{};
  std::array<Vec, 2> bg;
  while (ls_iter < max_ls) {
    if (f_new > f + c1 * t * gtd || (ls_iter > 1 && f_new >= f_prev)) {
      b = {t_prev, t}, bf = {f_prev, f_new}, bg = {g_prev, g_new}, bgtd = {gtd_prev, gtd_new};
      break;
    }
    if (std::abs(gtd_new) <= -c2 * gtd) {
      b = {t, t}, bf = {f_new, f_new}, bg = {g_new, g_new}, bgtd = {gtd_new, gtd_new};  // one point
      done = true;
      break;
    }
    if (gtd_new >= 0) {
      b = {t_prev, t}, bf = {f_prev, f_new}, bg = {g_prev, g_new}, bgtd = {gtd_prev, gtd_new};
      break;
    }
    const double bounds[2] = {t + 0.01 * (t - t_prev), t * 10};
    const double next = cubic(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds);
    t_prev = t, f_prev = f_new, g_prev = g_new, gtd_prev = gtd_new;
    t = next;
    e = fn(add(x, t, d));
    f_new = e.f, g_new = e.g, gtd_new = dot(e.g, d);
    ++evals, ++ls_iter;
  }
  if (ls_iter == max_ls) b = {0, t}, bf = {f, f_new}, bg = {g, g_new}, bgtd = {gtd, gtd_new};
  bool insuf_progress = false;
  int low = bf[0] <= bf[1] ? 0 : 1, high = 1 - low;
  while (!done && ls_iter < max_ls) {
    if (std::abs(b[1] - b[0]) * d_norm < tolerance_change) break;
    t = cubic(b[0], bf[0], bgtd[0], b[1], bf[1], bgtd[1], nullptr);
    const double bmax = std::max(b[0], b[1]), bmin = std::min(b[0], b[1]), eps = 0.1 * (bmax - bmin);
    if (std::min(bmax - t, t - bmin) < eps) {
      if (insuf_progress || t >= bmax || t <= bmin) {
        t = std::abs(t - bmax) < std::abs(t - bmin) ? bmax - eps : bmin + eps;
        insuf_progress = false;
      } else {
        insuf_progress = true;
      }
    } else {
      insuf_progress = false;
    }
    e = fn(add(x, t, d));
    f_new = e.f, g_new = e.g, gtd_new = dot(e.g, d);
    ++evals, ++ls_iter;
    if (f_new > f + c1 * t * gtd || f_new >= bf[low]) {
      b[high] = t, bf[high] = f_new, bg[high] = g_new, bgtd[high] = gtd_new;
      low = bf[0] <= bf[1] ? 0 : 1, high = 1 - low;
    } else {
      if (std::abs(gtd_new) <= -c2 * gtd) {
        done = true;
      } else if (gtd_new * (b[high] - b[low]) >= 0) {
        b[high] = b[low], bf[high] = bf[low], bg[high] = bg[low], bgtd[high] = bgtd[low];
      }
      b[low] = t, bf[low] = f_new, bg[low] = g_new, bgtd[low] = gtd_new;
    }
  }
  return {bf[low], bg[low], b[low], evals};
}

struct Lbfgs {
  Function fn;
  Vec x;
  double lr = 1;
  int max_iter = 20, max_eval = 25;
  double tolerance_grad = 1e-7, tolerance_change = 1e-9;
  size_t history_size = 100;
  bool wolfe = false;
  int func_evals = 0, n_iter = 0;
  Vec d, prev_flat_grad;
  double t = 0, H_diag = 1, prev_loss = 0;
  std::deque<Vec> old_dirs, old_stps;
  std::deque<double> ro;

  double step() {
    Eval e = fn(x);
    const double orig_loss = e.f;
    double loss = e.f;
    Vec flat_grad = e.g;
    int current_evals = 1;
    ++func_evals;
    bool opt_cond = max_abs(flat_grad) <= tolerance_grad;
    if (opt_cond) return orig_loss;
    int iteration = 0;
    while (iteration < max_iter) {
      ++iteration, ++n_iter;
      if (n_iter == 1) {
        d = add(Vec(flat_grad.size(), 0.0), -1.0, flat_grad);
        old_dirs.clear(), old_stps.clear(), ro.clear(), H_diag = 1;
      } else {
        const Vec y = add(flat_grad, -1.0, prev_flat_grad), s = add(Vec(d.size(), 0.0), t, d);
        const double ys = dot(y, s);
        if (ys > 1e-10) {
          if (old_dirs.size() == history_size) old_dirs.pop_front(), old_stps.pop_front(), ro.pop_front();
          old_dirs.push_back(y), old_stps.push_back(s), ro.push_back(1.0 / ys);
          H_diag = ys / dot(y, y);
        }
        const size_t num_old = old_dirs.size();
        std::vector<double> al(num_old);
        Vec q = add(Vec(flat_grad.size(), 0.0), -1.0, flat_grad);
        for (size_t i = num_old; i-- > 0;) al[i] = dot(old_stps[i], q) * ro[i], q = add(q, -al[i], old_dirs[i]);
        Vec r = add(Vec(q.size(), 0.0), H_diag, q);
        for (size_t i = 0; i < num_old; ++i) r = add(r, al[i] - dot(old_dirs[i], r) * ro[i], old_stps[i]);
        d = r;
      }
      prev_flat_grad = flat_grad, prev_loss = loss;
      t = n_iter == 1 ? std::min(1.0, 1.0 / l1(flat_grad)) * lr : lr;
      const double gtd = dot(flat_grad, d);
      if (gtd > -tolerance_change) break;
      int ls_func_evals = 0;
      if (wolfe) {
        WolfeResult found = strong_wolfe(fn, x, t, d, loss, flat_grad, gtd, tolerance_change);
        loss = found.f, flat_grad = found.g, t = found.t, ls_func_evals = found.evals;
        x = add(x, t, d);
        opt_cond = max_abs(flat_grad) <= tolerance_grad;
      } else {
        x = add(x, t, d);
        if (iteration != max_iter) {
          e = fn(x);
          loss = e.f, flat_grad = e.g, opt_cond = max_abs(flat_grad) <= tolerance_grad, ls_func_evals = 1;
        }
      }
      current_evals += ls_func_evals, func_evals += ls_func_evals;
      if (iteration == max_iter || current_evals >= max_eval || opt_cond) break;
      if (max_abs(add(Vec(d.size(), 0.0), t, d)) <= tolerance_change) break;
      if (std::abs(loss - prev_loss) < tolerance_change) break;
    }
    return orig_loss;
  }
  static double l1(const Vec& v) {
    double sum = 0.0;
    for (double e : v) sum += std::abs(e);
    return sum;
  }
};

}  // namespace ember::lbfgs_reference
