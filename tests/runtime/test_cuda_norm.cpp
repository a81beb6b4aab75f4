// CUDA layer_norm and layer_norm_backward: ember's kernels and cuDNN (EMBER_LAYER_NORM) against
// the CPU op on shapes that take the warp-per-row and block-per-row paths, in every floating
// dtype; bit-identical column sums across runs; and the benchmark hook. The conformance suite
// checks plain values on small shapes; these cover what it cannot (both implementations, long
// rows, determinism). Without a GPU they say why and skip.
#include <doctest/doctest.h>

#include "skip_case.h"

#ifdef EMBER_HAS_CUDA  // the CUDA op files and norm_cuda_ops.h exist only in CUDA builds

#include <cstdlib>
#include <string>

#include "cuda_norm_test_util.h"
#include "kernels/cuda/layer_norm.h"
#include "numeric_check.h"
#include "runtime/cuda/cudnn_layer_norm.h"
#include "runtime/cuda/norm_cuda_ops.h"
#include "runtime/ember.h"

namespace test_cuda_norm {

using namespace ember;
using ember::testing::check_close;
using ember::testing::random_values;
using ember::testing::values_of;
using ember::cuda_test::cudnn_or_skip;
using ember::cuda_test::LayerNormChoice;

namespace {

const Device kCuda0{DeviceType::CUDA, 0};

TensorList run_op(const char* name, std::initializer_list<Tensor> inputs, const Attrs& attrs) {
  const std::vector<Tensor> list(inputs);
  return dispatch(OpCall{lookup_op(name), list, attrs});
}

Tensor on_cpu(const Tensor& tensor) { return tensor.to(kCPU); }

// Random values on the CPU explicitly: with a GPU the default device is CUDA, and the reference
// must come from the CPU op.
Tensor random_tensor(const Dims& sizes, uint32_t seed, DType dtype) {
  return from_vector<double>(random_values(sizes.product(), seed), sizes, {.dtype = dtype, .device = kCPU});
}

// Relative tolerance per dtype: float32 and float64 compute alike on both devices; 16-bit
// outputs may differ by one rounding step.
double tolerance_for(DType dtype) {
  if (dtype == kFloat64) return 1e-10;
  if (dtype == kFloat32) return 1e-4;
  return dtype == kBFloat16 ? 3e-2 : 5e-3;
}

struct Shape {
  int64_t rows;
  int64_t cols;
};
// Warp path (33, 1024 columns) and block path (1500, 4096 columns).
const Shape kShapes[] = {{6, 33}, {17, 1024}, {5, 1500}, {3, 4096}};
const DType kDtypes[] = {kFloat32, kFloat64, kBFloat16, kFloat16};

void check_against_cpu(const char* implementation, DType dtype, Shape shape, uint32_t seed) {
  INFO(implementation, " ", dtype_name(dtype), " [", shape.rows, ", ", shape.cols, "]");
  const Dims normalized{shape.cols};
  const Tensor x = random_tensor({shape.rows, shape.cols}, seed, dtype);
  const Tensor weight = random_tensor(normalized, seed + 1, dtype);
  const Tensor bias = random_tensor(normalized, seed + 2, dtype);
  const Tensor grad_y = random_tensor({shape.rows, shape.cols}, seed + 3, dtype);
  const Attrs forward_attrs{{"normalized_shape", normalized}, {"eps", 1e-5}};
  const Attrs backward_attrs{{"normalized_shape", normalized}};
  const double tolerance = tolerance_for(dtype);

  const TensorList cpu = run_op("layer_norm", {x, weight, bias}, forward_attrs);
  const TensorList cpu_grads = run_op("layer_norm_backward", {grad_y, x, cpu[1], cpu[2], weight}, backward_attrs);

  const LayerNormChoice choice(implementation);
  const bool want_cudnn = std::string(implementation) == "cudnn";
  const int64_t forward_runs = cuda::cudnn_layer_norm_runs(false);
  const int64_t backward_runs = cuda::cudnn_layer_norm_runs(true);
  const TensorList gpu = run_op("layer_norm", {x.to(kCuda0), weight.to(kCuda0), bias.to(kCuda0)}, forward_attrs);
  const char* forward_names[] = {"y", "mean", "rstd"};
  for (int i = 0; i < 3; ++i) {
    INFO("forward output ", forward_names[i]);
    check_close(on_cpu(gpu[i]), values_of(cpu[i]), tolerance);
  }
  // Backward from the CPU's statistics, so both devices differentiate the same point.
  const TensorList gpu_grads = run_op("layer_norm_backward",
                                      {grad_y.to(kCuda0), x.to(kCuda0), cpu[1].to(kCuda0), cpu[2].to(kCuda0),
                                       weight.to(kCuda0)},
                                      backward_attrs);
  // grad_weight and grad_bias sum over rows: allow for the rows' 16-bit rounding adding up.
  const char* backward_names[] = {"grad_input", "grad_weight", "grad_bias"};
  for (int i = 0; i < 3; ++i) {
    INFO("backward output ", backward_names[i]);
    check_close(on_cpu(gpu_grads[i]), values_of(cpu_grads[i]), i == 0 ? tolerance : 2 * tolerance);
  }
  // float32 rows of 1024 and 4096 (transformer widths cuDNN's engines serve) must really reach
  // cuDNN in both directions: a descriptor bug would otherwise fall back to ember's kernels
  // silently and pass. Other cases say whether they fell back, and why.
  if (want_cudnn) {
    const bool forward_ran = cuda::cudnn_layer_norm_runs(false) > forward_runs;
    const bool backward_ran = cuda::cudnn_layer_norm_runs(true) > backward_runs;
    const std::string why_forward = cuda::cudnn_layer_norm_refusal(false, 0, dtype, shape.rows, shape.cols);
    const std::string why_backward = cuda::cudnn_layer_norm_refusal(true, 0, dtype, shape.rows, shape.cols);
    if (dtype == kFloat32 && shape.cols % 1024 == 0) {
      CHECK_MESSAGE(forward_ran, "cuDNN forward did not run: " << why_forward);
      CHECK_MESSAGE(backward_ran, "cuDNN backward did not run: " << why_backward);
    } else if (!forward_ran || !backward_ran) {
      MESSAGE("cuDNN fell back to ember's kernels (forward: " << (forward_ran ? "ran" : why_forward)
                                                              << "; backward: " << (backward_ran ? "ran" : why_backward)
                                                              << ")");
    }
  }
}

}  // namespace

TEST_CASE("cuda layer_norm: ember's kernels match the CPU op in every floating dtype") {
  if (!ember::testing::cuda_or_skip()) return;
  uint32_t seed = 10;
  for (DType dtype : kDtypes)
    for (Shape shape : kShapes) check_against_cpu("ember", dtype, shape, seed += 5);
}

// Rows far from zero: a float sum of 1024 values near 1e3 rounds the mean by more than the rows'
// spread of 1e-3, so y and rstd come out wrong; the CPU sums in double, and so must the kernels.
TEST_CASE("cuda layer_norm: ember's kernels keep rows far from zero, as the CPU does") {
  if (!ember::testing::cuda_or_skip()) return;
  const LayerNormChoice choice("ember");
  for (Shape shape : {Shape{8, 1024}, Shape{4, 4096}}) {  // warp path, block path
    INFO("[", shape.rows, ", ", shape.cols, "]");
    std::vector<double> values = random_values(shape.rows * shape.cols, 77);
    for (double& value : values) value = 1000.0 + 1e-3 * value;
    const Tensor x = from_vector<double>(values, {shape.rows, shape.cols}, {.dtype = kFloat32, .device = kCPU});
    const Attrs attrs{{"normalized_shape", Dims{shape.cols}}, {"eps", 1e-12}};
    const TensorList cpu = run_op("layer_norm", {x, Tensor(), Tensor()}, attrs);
    const TensorList gpu = run_op("layer_norm", {x.to(kCuda0), Tensor(), Tensor()}, attrs);
    const char* names[] = {"y", "mean", "rstd"};
    for (int i = 0; i < 3; ++i) {
      INFO("output ", names[i]);
      check_close(on_cpu(gpu[i]), values_of(cpu[i]), 1e-4);
    }
  }
}

// The backward's cancellation: grad_y near 1e3 with a spread of 1e-3 makes g - mean(g) about 1e-3,
// and a float mean(g) of 1024 such values is off by about 1e-4; with rstd near 100 (x's spread
// 1e-2) grad_input would be off by 1e-2. The CPU sums in double, and so must the kernels.
TEST_CASE("cuda layer_norm_backward: ember's kernels keep gradients far from zero, as the CPU does") {
  if (!ember::testing::cuda_or_skip()) return;
  const LayerNormChoice choice("ember");
  for (Shape shape : {Shape{8, 1024}, Shape{4, 4096}}) {  // warp path, block path
    INFO("[", shape.rows, ", ", shape.cols, "]");
    std::vector<double> x_values = random_values(shape.rows * shape.cols, 78);
    for (double& value : x_values) value *= 1e-2;
    std::vector<double> grad_values = random_values(shape.rows * shape.cols, 79);
    for (double& value : grad_values) value = 1000.0 + 1e-3 * value;
    const Dims sizes{shape.rows, shape.cols};
    const Tensor x = from_vector<double>(x_values, sizes, {.dtype = kFloat32, .device = kCPU});
    const Tensor grad_y = from_vector<double>(grad_values, sizes, {.dtype = kFloat32, .device = kCPU});
    const Tensor weight = ones({shape.cols}, {.device = kCPU});
    const Attrs normalized{{"normalized_shape", Dims{shape.cols}}};
    const TensorList stats = run_op("layer_norm", {x, weight, Tensor()}, {{"normalized_shape", Dims{shape.cols}}, {"eps", 1e-12}});
    const TensorList cpu = run_op("layer_norm_backward", {grad_y, x, stats[1], stats[2], weight}, normalized);
    const TensorList gpu = run_op("layer_norm_backward",
                                  {grad_y.to(kCuda0), x.to(kCuda0), stats[1].to(kCuda0), stats[2].to(kCuda0),
                                   weight.to(kCuda0)},
                                  normalized);
    const char* names[] = {"grad_input", "grad_weight", "grad_bias"};
    for (int i = 0; i < 3; ++i) {
      INFO("output ", names[i]);
      check_close(on_cpu(gpu[i]), values_of(cpu[i]), 1e-4);
    }
  }
}

TEST_CASE("cuda layer_norm: cuDNN matches the CPU op, and the benchmark hook times both") {
  if (!ember::testing::cuda_or_skip() || !cudnn_or_skip()) return;
  uint32_t seed = 100;
  for (DType dtype : kDtypes)  // float64 falls back to ember's kernels under EMBER_LAYER_NORM=cudnn
    for (Shape shape : kShapes) check_against_cpu("cudnn", dtype, shape, seed += 5);
  // Small and few iterations: gpu_check.sh also runs these under compute-sanitizer. The numbers
  // are a smoke test of the hook, not a measurement (tools/ember-bench is for that).
  // cuDNN must run float32 layer norm (else the checks above only saw our fallback); a 16-bit
  // shape cuDNN has no engine for is reported, not failed (our kernels run it instead).
  for (DType dtype : {kFloat32, kBFloat16, kFloat16}) {
    const double ours = cuda::benchmark_layer_norm(1024, 1024, dtype, cuda::LayerNormImpl::Ember, 5);
    CHECK(ours > 0.0);
    try {
      const double theirs = cuda::benchmark_layer_norm(1024, 1024, dtype, cuda::LayerNormImpl::Cudnn, 5);
      MESSAGE("layer_norm [1024, 1024] " << dtype_name(dtype) << ": ember " << ours * 1e6 << " us, cuDNN "
                                         << theirs * 1e6 << " us");
    } catch (const Error& error) {
      MESSAGE("layer_norm [1024, 1024] " << dtype_name(dtype) << ": ember " << ours * 1e6 << " us; " << error.what());
      CHECK(dtype != kFloat32);
    }
  }
}

TEST_CASE("cuda layer_norm: auto takes cuDNN for each pass only where the benchmark measured it faster") {
  if (!ember::testing::cuda_or_skip() || !cudnn_or_skip()) return;
  const int64_t rows = 512, cols = 1024;  // float32, cols % 1024 == 0: cuDNN has engines for it
  bool cudnn_faster[2] = {false, false};
  for (const auto pass : {cuda::LayerNormPass::Forward, cuda::LayerNormPass::Backward}) {
    const double ours = cuda::benchmark_layer_norm(rows, cols, kFloat32, cuda::LayerNormImpl::Ember, 5, pass);
    const double theirs = cuda::benchmark_layer_norm(rows, cols, kFloat32, cuda::LayerNormImpl::Cudnn, 5, pass);
    cudnn_faster[static_cast<int>(pass)] = theirs < ours;
    MESSAGE("layer_norm [512, 1024] " << (pass == cuda::LayerNormPass::Forward ? "forward" : "backward")
                                      << ": ember " << ours * 1e6 << " us, cuDNN " << theirs * 1e6 << " us");
  }
  const LayerNormChoice choice("auto");
  const Tensor x = random_tensor({rows, cols}, 21, kFloat32).to(kCuda0);
  const Tensor weight = random_tensor({cols}, 22, kFloat32).to(kCuda0);
  const Tensor bias = random_tensor({cols}, 23, kFloat32).to(kCuda0);
  const int64_t forward_before = cuda::cudnn_layer_norm_runs(false);
  const int64_t backward_before = cuda::cudnn_layer_norm_runs(true);
  const TensorList forward =
      run_op("layer_norm", {x, weight, bias}, Attrs{{"normalized_shape", Dims{cols}}, {"eps", 1e-5}});
  run_op("layer_norm_backward", {forward[0], x, forward[1], forward[2], weight}, Attrs{{"normalized_shape", Dims{cols}}});
  CHECK((cuda::cudnn_layer_norm_runs(false) - forward_before == 1) == cudnn_faster[0]);
  CHECK((cuda::cudnn_layer_norm_runs(true) - backward_before == 1) == cudnn_faster[1]);
}

TEST_CASE("cuda layer_norm: past cuDNN's plan limit a new shape runs ember's kernels, right, and says why") {
  if (!ember::testing::cuda_or_skip() || !cudnn_or_skip()) return;
  const LayerNormChoice choice("cudnn");
  struct RestoreLimit {
    ~RestoreLimit() { cuda::set_cudnn_plan_limit(512); }
  } restore;
  cuda::set_cudnn_plan_limit(cuda::cudnn_plan_count());  // full from here on
  const int64_t rows = 37, cols = 2048;  // float32, cols % 1024 == 0: cuDNN has engines for it
  const Tensor x = random_tensor({rows, cols}, 31, kFloat32);
  const Tensor weight = random_tensor({cols}, 32, kFloat32);
  const Tensor bias = random_tensor({cols}, 33, kFloat32);
  const Attrs attrs{{"normalized_shape", Dims{cols}}, {"eps", 1e-5}};
  const TensorList cpu = run_op("layer_norm", {x, weight, bias}, attrs);
  const int64_t runs_before = cuda::cudnn_layer_norm_runs(false);
  const TensorList full = run_op("layer_norm", {x.to(kCuda0), weight.to(kCuda0), bias.to(kCuda0)}, attrs);
  CHECK(cuda::cudnn_layer_norm_runs(false) == runs_before);
  const std::string why = cuda::cudnn_layer_norm_refusal(false, 0, kFloat32, rows, cols);
  CHECK_MESSAGE(why.find("plan cache is full") != std::string::npos, why);
  check_close(on_cpu(full[0]), values_of(cpu[0]), tolerance_for(kFloat32));
  cuda::set_cudnn_plan_limit(512);  // room again: the same shape now reaches cuDNN
  const TensorList planned = run_op("layer_norm", {x.to(kCuda0), weight.to(kCuda0), bias.to(kCuda0)}, attrs);
  CHECK(cuda::cudnn_layer_norm_runs(false) == runs_before + 1);
  check_close(on_cpu(planned[0]), values_of(cpu[0]), tolerance_for(kFloat32));
}

TEST_CASE("cuda layer_norm_backward: ember's column sums are bit-identical across runs") {
  if (!ember::testing::cuda_or_skip()) return;
  const LayerNormChoice choice("ember");
  const int64_t rows = 3000, cols = 257;  // many row chunks, a partial column tile
  const Tensor x = random_tensor({rows, cols}, 7, kFloat32).to(kCuda0);
  const Tensor weight = random_tensor({cols}, 8, kFloat32).to(kCuda0);
  const Tensor grad_y = random_tensor({rows, cols}, 9, kFloat32).to(kCuda0);
  const Attrs forward_attrs{{"normalized_shape", Dims{cols}}, {"eps", 1e-5}};
  const TensorList forward = run_op("layer_norm", {x, weight, Tensor{}}, forward_attrs);
  const Attrs backward_attrs{{"normalized_shape", Dims{cols}}};
  const TensorList first = run_op("layer_norm_backward", {grad_y, x, forward[1], forward[2], weight}, backward_attrs);
  const TensorList second = run_op("layer_norm_backward", {grad_y, x, forward[1], forward[2], weight}, backward_attrs);
  for (int i = 0; i < 3; ++i) CHECK(values_of(on_cpu(first[i])) == values_of(on_cpu(second[i])));
}

TEST_CASE("cuda layer_norm: EMBER_LAYER_NORM names an implementation or fails clearly") {
  // Host-side only: runs with or without a GPU.
  {
    const LayerNormChoice choice("ember");
    CHECK(cuda::layer_norm_impl_from_env() == cuda::LayerNormImpl::Ember);
  }
  {
    const LayerNormChoice choice("cudnn");
    CHECK(cuda::layer_norm_impl_from_env() == cuda::LayerNormImpl::Cudnn);
  }
  {
    const LayerNormChoice choice("fastest");
    CHECK_THROWS_WITH_AS(cuda::layer_norm_impl_from_env(),
                         doctest::Contains("EMBER_LAYER_NORM must be ember, cudnn or auto, got 'fastest'"), Error);
  }
  CHECK_THROWS_WITH_AS(cuda::benchmark_layer_norm(0, 8, kFloat32, cuda::LayerNormImpl::Ember, 1),
                       doctest::Contains("benchmark_layer_norm: rows 0, cols 8"), Error);
}

TEST_CASE("cuda layer_norm: the column-sum chunks cover every row, and cuDNN says why it cannot run") {
  // Host-side only: runs with or without a GPU.
  for (int64_t rows : {int64_t{0}, int64_t{1}, int64_t{63}, int64_t{64}, int64_t{65}, int64_t{3000},
                       int64_t{16385}, int64_t{1} << 24}) {
    INFO("rows ", rows);
    const int64_t chunks = cuda::layer_norm_partial_chunks(rows, 768);
    CHECK(chunks >= 1);
    CHECK(chunks <= 256);
    const int64_t rows_per_chunk = (rows + chunks - 1) / chunks;
    CHECK(chunks * rows_per_chunk >= rows);
  }
  CHECK(cuda::layer_norm_partial_chunks(3000, 257) == cuda::layer_norm_partial_chunks(3000, 257));
  std::string why_not;
#ifdef EMBER_HAS_CUDNN
  if (!cuda_is_available(&why_not)) CHECK(cuda::cudnn_unavailable_reason().find(why_not) != std::string::npos);
#else
  CHECK(cuda::cudnn_unavailable_reason().find("without cuDNN") != std::string::npos);
#endif
}

#else

TEST_CASE("cuda layer_norm: not built") { ember::testing::skip_case("CUDA unavailable: ember was built without CUDA"); }

#endif  // EMBER_HAS_CUDA

}  // namespace test_cuda_norm
