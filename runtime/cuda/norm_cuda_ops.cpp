// CUDA kernels of layer_norm and layer_norm_backward: inputs made dense on the device, then
// ember's kernels (kernels/cuda/layer_norm.h) or cuDNN (cudnn_layer_norm.h) as EMBER_LAYER_NORM
// and the measurements of benchmark_layer_norm decide (norm_cuda_ops.h).
#include "runtime/cuda/norm_cuda_ops.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>

#include "kernels/cuda/layer_norm.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_op_utils.h"
#include "runtime/cuda/cudnn_layer_norm.h"
#include "runtime/functional.h"
#include "runtime/ops/registry.h"

namespace ember::cuda {

namespace {

constexpr DeviceType kCuda = DeviceType::CUDA;

// Seconds per call measured by benchmark_layer_norm, per (device, rows, cols, dtype, pass): two
// GPUs of one machine need not be the same model, nor favour the same implementation.
struct Measurements {
  double ember = 0.0;  // 0: not measured
  double cudnn = 0.0;
};
using ShapeKey = std::tuple<int, int64_t, int64_t, DType, LayerNormPass>;

std::mutex& measurements_mutex() {
  static std::mutex mutex;
  return mutex;
}
std::map<ShapeKey, Measurements>& measurements() {
  static std::map<ShapeKey, Measurements> table;
  return table;
}

bool cudnn_measured_faster(int device, int64_t rows, int64_t cols, DType dtype, LayerNormPass pass) {
  const std::lock_guard lock(measurements_mutex());
  const auto found = measurements().find({device, rows, cols, dtype, pass});
  if (found == measurements().end()) return false;
  const Measurements& seen = found->second;
  return seen.ember > 0.0 && seen.cudnn > 0.0 && seen.cudnn < seen.ember;
}

bool wants_cudnn(int device, int64_t rows, int64_t cols, DType dtype, LayerNormPass pass) {
  switch (layer_norm_impl_from_env()) {
    case LayerNormImpl::Ember: return false;
    case LayerNormImpl::Cudnn: return true;
    case LayerNormImpl::Auto: return cudnn_measured_faster(device, rows, cols, dtype, pass);
  }
  return false;
}

// A dense copy on the device (the tensor itself when already dense); undefined stays undefined.
Tensor dense(const Tensor& tensor) { return tensor.defined() ? contiguous_on_device(tensor) : tensor; }
const void* pointer_or_null(const Tensor& tensor) { return tensor.defined() ? tensor.raw_data_ptr() : nullptr; }

// Writes `source` converted to `destination`'s dtype into `destination` (same shape, both dense).
void copy_into(const Tensor& destination, const Tensor& source) {
  const LaunchShape shape = shape_of(destination);
  launch_checked(launch_cast(destination.dtype(), destination.raw_data_ptr(), source.dtype(),
                             operand_of(source, shape), shape));
}

// cuDNN's layer-norm engines take float32 scale and bias and give float32 gradients of them,
// whatever the input's dtype, so 16-bit parameters are converted around the call (cols elements,
// small next to the rows). float64 and a missing weight or bias have no cuDNN engine: false.
bool cudnn_forward(LayerNormForward args, const Tensor& weight, const Tensor& bias, int device_index) {
  if (args.dtype == kFloat64 || !weight.defined() || !bias.defined()) return false;
  const Tensor weight32 = as_dtype(weight, kFloat32);
  const Tensor bias32 = as_dtype(bias, kFloat32);
  args.weight = weight32.raw_data_ptr();
  args.bias = bias32.raw_data_ptr();
  return cudnn_layer_norm_forward(args, device_index);
}

bool cudnn_backward(LayerNormBackward args, const Tensor& weight, TensorList& outputs) {
  if (args.dtype == kFloat64 || !weight.defined()) return false;
  const Tensor weight32 = as_dtype(weight, kFloat32);
  const bool convert = args.dtype != kFloat32;
  const Tensor grad_weight32 = convert ? make_tensor(outputs[1].sizes(), kFloat32, outputs[1].device()) : outputs[1];
  const Tensor grad_bias32 = convert ? make_tensor(outputs[2].sizes(), kFloat32, outputs[2].device()) : outputs[2];
  args.weight = weight32.raw_data_ptr();
  args.grad_weight = grad_weight32.raw_data_ptr();
  args.grad_bias = grad_bias32.raw_data_ptr();
  if (!cudnn_layer_norm_backward(args, outputs[0].device().index)) return false;
  if (convert) {
    copy_into(outputs[1], grad_weight32);
    copy_into(outputs[2], grad_bias32);
  }
  return true;
}

// ember's backward kernels, with their column-sum scratch from the caching allocator (freed,
// stream-ordered, on return): float64, the kernels' sums.
void ember_backward(LayerNormBackward args, Device device) {
  const int64_t chunks = layer_norm_partial_chunks(args.rows, args.cols);
  const Tensor partials = make_tensor({2 * chunks * args.cols}, kFloat64, device);
  args.partials = partials.raw_data_ptr();
  launch_checked(launch_layer_norm_backward(args));
}

void layer_norm_cuda(const OpCall& call, TensorList& outputs) {
  DeviceGuard guard(outputs[0].device());
  const Tensor input = dense(call.input(0));
  const Tensor weight = dense(call.input(1));
  const Tensor bias = dense(call.input(2));
  LayerNormForward args;
  args.dtype = input.dtype();
  args.input = input.raw_data_ptr();
  args.weight = pointer_or_null(weight);
  args.bias = pointer_or_null(bias);
  args.output = outputs[0].raw_data_ptr();
  args.mean = outputs[1].raw_data_ptr();
  args.rstd = outputs[2].raw_data_ptr();
  args.rows = outputs[1].numel();
  args.cols = call.attrs.get<Dims>("normalized_shape").product();
  args.eps = call.attrs.get<double>("eps");
  args.stream = stream_of(outputs[0]);
  if (wants_cudnn(outputs[0].device().index, args.rows, args.cols, args.dtype, LayerNormPass::Forward) &&
      cudnn_forward(args, weight, bias, outputs[0].device().index))
    return;
  launch_checked(launch_layer_norm_forward(args));
}

void layer_norm_backward_cuda(const OpCall& call, TensorList& outputs) {
  DeviceGuard guard(outputs[0].device());
  const Tensor grad_output = dense(call.input(0));
  const Tensor input = dense(call.input(1));
  const Tensor mean = dense(call.input(2));
  const Tensor rstd = dense(call.input(3));
  const Tensor weight = dense(call.input(4));
  LayerNormBackward args;
  args.dtype = input.dtype();
  args.grad_output = grad_output.raw_data_ptr();
  args.input = input.raw_data_ptr();
  args.mean = mean.raw_data_ptr();
  args.rstd = rstd.raw_data_ptr();
  args.weight = pointer_or_null(weight);
  args.grad_input = outputs[0].raw_data_ptr();
  args.grad_weight = outputs[1].raw_data_ptr();
  args.grad_bias = outputs[2].raw_data_ptr();
  args.rows = mean.numel();
  args.cols = outputs[1].numel();
  args.stream = stream_of(outputs[0]);
  if (wants_cudnn(outputs[0].device().index, args.rows, args.cols, args.dtype, LayerNormPass::Backward) &&
      cudnn_backward(args, weight, outputs))
    return;
  ember_backward(args, outputs[0].device());
}

void register_norm_cuda(OpRegistry& registry) {
  registry.set_kernel("layer_norm", kCuda, layer_norm_cuda);
  registry.set_kernel("layer_norm_backward", kCuda, layer_norm_backward_cuda);
}

const OpRegistration registration(register_norm_cuda);

}  // namespace

LayerNormImpl layer_norm_impl_from_env() {
  const char* value = std::getenv("EMBER_LAYER_NORM");
  if (value == nullptr || *value == '\0') return LayerNormImpl::Auto;
  const std::string_view name(value);
  if (name == "ember") return LayerNormImpl::Ember;
  if (name == "cudnn") return LayerNormImpl::Cudnn;
  check(name == "auto", "layer_norm: EMBER_LAYER_NORM must be ember, cudnn or auto, got '{}'", name);
  return LayerNormImpl::Auto;
}

double benchmark_layer_norm(int64_t rows, int64_t cols, DType dtype, LayerNormImpl impl, int iterations,
                            LayerNormPass pass, int device_index) {
  check(impl != LayerNormImpl::Auto, "benchmark_layer_norm: pick ember or cudnn, not auto");
  check(rows > 0 && cols > 0 && iterations > 0,
        "benchmark_layer_norm: rows {}, cols {} and iterations {} must be positive", rows, cols, iterations);
  check(is_floating(dtype), "benchmark_layer_norm: expected a floating dtype, got {}", dtype);
  const Device device{kCuda, device_index};
  check_device(device);
  DeviceGuard guard(device);
  const DType statistic = dtype == kFloat64 ? kFloat64 : kFloat32;
  // Random values drawn on the CPU (randn needs no CUDA kernel then); they do not change the timing.
  const TensorOptions on_cpu{.device = kCPU};
  const Tensor input = randn({rows, cols}, on_cpu).to(dtype).to(device);
  const Tensor weight = randn({cols}, on_cpu).to(dtype).to(device);
  const Tensor bias = randn({cols}, on_cpu).to(dtype).to(device);
  const Tensor output = make_tensor({rows, cols}, dtype, device);
  const Tensor mean = make_tensor({rows}, statistic, device);
  const Tensor rstd = make_tensor({rows}, statistic, device);
  const LayerNormForward forward{.dtype = dtype,
                                 .input = input.raw_data_ptr(),
                                 .weight = weight.raw_data_ptr(),
                                 .bias = bias.raw_data_ptr(),
                                 .output = output.raw_data_ptr(),
                                 .mean = mean.raw_data_ptr(),
                                 .rstd = rstd.raw_data_ptr(),
                                 .rows = rows,
                                 .cols = cols,
                                 .eps = 1e-5,
                                 .stream = stream_of(output)};
  // The backward pass reads the forward's statistics, and its output as the incoming gradient.
  TensorList gradients{make_tensor({rows, cols}, dtype, device), make_tensor({cols}, dtype, device),
                       make_tensor({cols}, dtype, device)};
  const LayerNormBackward backward{.dtype = dtype,
                                   .grad_output = output.raw_data_ptr(),
                                   .input = input.raw_data_ptr(),
                                   .mean = mean.raw_data_ptr(),
                                   .rstd = rstd.raw_data_ptr(),
                                   .weight = weight.raw_data_ptr(),
                                   .grad_input = gradients[0].raw_data_ptr(),
                                   .grad_weight = gradients[1].raw_data_ptr(),
                                   .grad_bias = gradients[2].raw_data_ptr(),
                                   .rows = rows,
                                   .cols = cols,
                                   .stream = forward.stream};
  const bool is_backward = pass == LayerNormPass::Backward;
  if (is_backward) launch_checked(launch_layer_norm_forward(forward));  // the statistics it reads
  const auto run_once = [&] {
    if (impl == LayerNormImpl::Ember) {
      if (is_backward) return ember_backward(backward, device);
      return launch_checked(launch_layer_norm_forward(forward));
    }
    if (is_backward ? cudnn_backward(backward, weight, gradients) : cudnn_forward(forward, weight, bias, device.index))
      return;
    std::string why_not = cudnn_unavailable_reason();
    if (why_not.empty()) why_not = cudnn_layer_norm_refusal(is_backward, device.index, dtype, rows, cols);
    fail("benchmark_layer_norm: cuDNN cannot run layer_norm{} for [{}, {}] {}{}", is_backward ? "_backward" : "",
         rows, cols, dtype, why_not.empty() ? " (no cuDNN engine for this shape and dtype)" : " (" + why_not + ")");
  };
  run_once();  // warm-up: builds and caches cuDNN's plan, loads kernels
  const Stream stream = current_stream(device);
  Event start(true), stop(true);
  start.record(stream);
  for (int i = 0; i < iterations; ++i) run_once();
  stop.record(stream);
  stop.synchronize();  // the host reads the timing: the one place this waits for the GPU
  const double seconds = start.elapsed_milliseconds(stop) / 1000.0 / iterations;
  const std::lock_guard lock(measurements_mutex());
  Measurements& seen = measurements()[{device_index, rows, cols, dtype, pass}];
  (impl == LayerNormImpl::Ember ? seen.ember : seen.cudnn) = seconds;
  return seconds;
}

}  // namespace ember::cuda
