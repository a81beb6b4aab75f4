// A float64 reference of torch.nn.functional.grid_sample, one output element at a time, written
// from ATen's scalar kernels (GridSampler.h, GridSampler.cpp's CPU fallback): unnormalize, the
// padding rules with int-range downgrade, bilinear corners nw, ne, sw, se, nearbyint for nearest,
// bicubic over padded taps; 3-D bilinear over 8 corners and 3-D nearest.
#pragma once

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <vector>

#include "runtime/nn/functional_grid_sample.h"

namespace ember::testing {

using GridMode = nn::functional::GridSampleMode;
using GridPadding = nn::functional::GridSamplePadding;

inline double reference_unnormalize(double g, int64_t size, bool align) {
  return align ? ((g + 1) / 2) * static_cast<double>(size - 1) : ((g + 1) * static_cast<double>(size) - 1) / 2;
}

inline double reference_clip(double x, int64_t size) {
  if (!(x > 0)) return std::isnan(x) ? x : 0.0;  // NaN stays NaN, to be downgraded below
  return std::min(static_cast<double>(size - 1), x);
}

inline double reference_reflect(double x, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return 0.0;
  const double low = static_cast<double>(twice_low) / 2;
  const double span = static_cast<double>(twice_high - twice_low) / 2;
  x = std::fabs(x - low);
  const double extra = std::fmod(x, span);
  const int flips = static_cast<int>(std::floor(x / span));
  return flips % 2 == 0 ? extra + low : span - extra + low;
}

inline double reference_pad(double x, int64_t size, GridPadding padding, bool align) {
  if (padding == GridPadding::Border) {
    x = reference_clip(x, size);
  } else if (padding == GridPadding::Reflection) {
    x = align ? reference_reflect(x, 0, 2 * (size - 1)) : reference_reflect(x, -1, 2 * size - 1);
    x = reference_clip(x, size);
  }
  if (x > INT_MAX - 1 || x < INT_MIN || !std::isfinite(x)) return -100.0;
  return x;
}

// input [N, C, *spatial] (2 or 3 spatial dims), grid [N, *out, k] as flat row-major values.
struct GridSampleCase {
  std::vector<double> input;
  std::vector<int64_t> input_sizes;
  std::vector<double> grid;
  std::vector<int64_t> grid_sizes;
};

inline double cubic_near_reference(double t) { return ((-0.75 + 2) * t - (-0.75 + 3)) * t * t + 1; }
inline double cubic_far_reference(double t) { return ((-0.75 * t - 5 * -0.75) * t + 8 * -0.75) * t - 4 * -0.75; }
inline double cubic_interp_reference(const double v[4], double t) {
  const double c[4] = {cubic_far_reference(t + 1), cubic_near_reference(t), cubic_near_reference(1 - t),
                       cubic_far_reference(1 - t + 1)};
  return v[0] * c[0] + v[1] * c[1] + v[2] * c[2] + v[3] * c[3];
}

// The output [N, C, *out] as flat values.
inline std::vector<double> reference_grid_sample(const GridSampleCase& c, GridMode mode, GridPadding padding,
                                                 bool align) {
  const int k = static_cast<int>(c.input_sizes.size()) - 2;
  const int64_t n_size = c.input_sizes[0], channels = c.input_sizes[1];
  const int64_t depth = k == 3 ? c.input_sizes[2] : 1;
  const int64_t height = c.input_sizes[k == 3 ? 3 : 2], width = c.input_sizes[k == 3 ? 4 : 3];
  int64_t points = 1;
  for (int a = 1; a <= k; ++a) points *= c.grid_sizes[a];
  std::vector<double> out;
  for (int64_t n = 0; n < n_size; ++n) {
    for (int64_t ch = 0; ch < channels; ++ch) {
      const double* plane = c.input.data() + (n * channels + ch) * depth * height * width;
      // The value at integer (z, y, x), 0 outside the input.
      auto at = [&](int64_t z, int64_t y, int64_t x) {
        if (z < 0 || z >= depth || y < 0 || y >= height || x < 0 || x >= width) return 0.0;
        return plane[(z * height + y) * width + x];
      };
      for (int64_t p = 0; p < points; ++p) {
        const double* g = c.grid.data() + (n * points + p) * k;
        const double gx = g[0], gy = g[1], gz = k == 3 ? g[2] : -1.0;
        if (mode == GridMode::Bicubic) {
          const double ix = reference_unnormalize(gx, width, align);
          const double iy = reference_unnormalize(gy, height, align);
          const double fx = std::floor(ix), fy = std::floor(iy);
          // get_value_bounded: each tap's coordinate padded, then truncated.
          auto tap = [&](double x, double y) {
            const auto px = static_cast<int64_t>(reference_pad(x, width, padding, align));
            const auto py = static_cast<int64_t>(reference_pad(y, height, padding, align));
            return at(0, py, px);
          };
          double rows[4];
          for (int i = 0; i < 4; ++i) {
            const double values[4] = {tap(fx - 1, fy - 1 + i), tap(fx, fy - 1 + i), tap(fx + 1, fy - 1 + i),
                                      tap(fx + 2, fy - 1 + i)};
            rows[i] = cubic_interp_reference(values, ix - fx);
          }
          out.push_back(cubic_interp_reference(rows, iy - fy));
          continue;
        }
        const double ix = reference_pad(reference_unnormalize(gx, width, align), width, padding, align);
        const double iy = reference_pad(reference_unnormalize(gy, height, align), height, padding, align);
        const double iz = k == 3 ? reference_pad(reference_unnormalize(gz, depth, align), depth, padding, align) : 0;
        if (mode == GridMode::Nearest) {
          out.push_back(at(static_cast<int64_t>(std::nearbyint(iz)), static_cast<int64_t>(std::nearbyint(iy)),
                           static_cast<int64_t>(std::nearbyint(ix))));
          continue;
        }
        const double x0 = std::floor(ix), y0 = std::floor(iy), z0 = std::floor(iz);
        if (k == 2) {
          const double nw = (x0 + 1 - ix) * (y0 + 1 - iy), ne = (ix - x0) * (y0 + 1 - iy);
          const double sw = (x0 + 1 - ix) * (iy - y0), se = (ix - x0) * (iy - y0);
          const auto x = static_cast<int64_t>(x0), y = static_cast<int64_t>(y0);
          out.push_back(at(0, y, x) * nw + at(0, y, x + 1) * ne + at(0, y + 1, x) * sw + at(0, y + 1, x + 1) * se);
          continue;
        }
        double sum = 0;
        for (int corner = 0; corner < 8; ++corner) {
          const int dx = corner & 1, dy = (corner >> 1) & 1, dz = (corner >> 2) & 1;
          const double wx = dx ? ix - x0 : x0 + 1 - ix, wy = dy ? iy - y0 : y0 + 1 - iy;
          const double wz = dz ? iz - z0 : z0 + 1 - iz;
          sum += at(static_cast<int64_t>(z0) + dz, static_cast<int64_t>(y0) + dy, static_cast<int64_t>(x0) + dx) * wx *
                 wy * wz;
        }
        out.push_back(sum);
      }
    }
  }
  return out;
}

}  // namespace ember::testing
