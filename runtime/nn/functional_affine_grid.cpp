// F::affine_grid (functional_grid_sample.h): PyTorch's affine_grid_generator as a composite. The
// homogeneous base grid [D?, H, W, k + 1] is built from linspace on theta's device and dtype, and
// one bmm with theta^T maps it, so theta's gradient comes from bmm's backward.
#include <algorithm>
#include <vector>

#include "runtime/dtype.h"
#include "runtime/functional.h"
#include "runtime/nn/functional_grid_sample.h"

namespace ember::nn::functional {

namespace {

// linspace_from_neg_one: the coordinates of `steps` pixel centres in [-1, 1]: linspace(-1, 1, S),
// times (S - 1) / S without align_corners (the centres then sit half a pixel inside the edges);
// a single 0 where S <= 1.
Tensor base_coordinates(const Tensor& theta, int64_t steps, bool align_corners) {
  const TensorOptions options{.dtype = theta.dtype(), .device = theta.device()};
  if (steps <= 1) return zeros({steps}, options);  // steps is 0 only in an empty grid
  const Tensor range = linspace(-1.0, 1.0, steps, options);
  if (align_corners) return range;
  // PyTorch's range * (S - 1) / S: the product first, then the quotient.
  return div(mul(range, static_cast<double>(steps - 1)), static_cast<double>(steps));
}

// The checks of torch.nn.functional.affine_grid, then theta's batch against size[0] (PyTorch's
// bmm would refuse it with a less direct message).
void check_arguments(const Tensor& theta, const Dims& size, bool align_corners) {
  check(theta.defined(), "affine_grid: expected theta to be defined");
  check(is_floating(theta.dtype()), "affine_grid: Expected theta to have floating point type, but got {}",
        theta.dtype());
  const int rank = size.size();
  check(rank == 4 || rank == 5,
        "affine_grid: only supports 4D and 5D sizes, for 2D and 3D affine transforms, respectively. Got size {}", size);
  const int64_t rows = rank == 4 ? 2 : 3;
  check(theta.dim() == 3 && theta.size(1) == rows && theta.size(2) == rows + 1,
        "affine_grid: Expected a batch of {}D affine matrices of shape Nx{}x{} for size {}. Got {}.", rank - 2, rows,
        rows + 1, size, theta.sizes());
  const int64_t smallest_spatial = *std::min_element(size.begin() + 2, size.end());
  const int64_t smallest = *std::min_element(size.begin(), size.end());
  // PyTorch only warns about a unit-size grid with align_corners, and skips the positivity check
  // there; a negative size is refused all the same (PyTorch's empty() refuses it).
  check(smallest >= 0 && (smallest > 0 || (align_corners && smallest_spatial == 1)),
        "affine_grid: Expected non-zero, positive output size. Got {}", size);
  check(theta.size(0) == size[0],
        "affine_grid: theta holds {} affine matrices (shape {}) but size asks for a batch of {} (size {})",
        theta.size(0), theta.sizes(), size[0], size);
}

}  // namespace

Tensor affine_grid(const Tensor& theta, const Dims& size, std::optional<bool> align_corners, Where where) {
  CallSiteScope site(where);
  const bool align = align_corners.value_or(false);
  check_arguments(theta, size, align);
  const int axes = size.size() - 2;  // 2 (H, W) or 3 (D, H, W)
  const int64_t batch = size[0];
  Dims spatial;
  for (int a = 0; a < axes; ++a) spatial.push_back(size[2 + a]);
  // Component j of a base point runs along spatial axis axes - 1 - j (x along W, y along H, z along
  // D); the last component is 1.
  std::vector<Tensor> components;
  for (int j = 0; j < axes; ++j) {
    const int axis = axes - 1 - j;
    Dims shape = Dims::filled(axes, 1);
    shape[axis] = spatial[axis];
    components.push_back(expand(reshape(base_coordinates(theta, spatial[axis], align), shape), spatial));
  }
  components.push_back(ones(spatial, {.dtype = theta.dtype(), .device = theta.device()}));
  const int64_t points = spatial.product();
  const Tensor base = reshape(stack(components, -1), {1, points, axes + 1});
  const Tensor grid = bmm(expand(base, {batch, points, axes + 1}), transpose(theta, 1, 2));
  Dims grid_sizes{batch};
  for (int64_t extent : spatial) grid_sizes.push_back(extent);
  grid_sizes.push_back(axes);
  return reshape(grid, grid_sizes);
}

}  // namespace ember::nn::functional
