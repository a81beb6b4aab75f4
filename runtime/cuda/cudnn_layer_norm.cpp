// cuDNN layer_norm (cudnn_layer_norm.h). A row-major (rows x cols) tensor is described to cuDNN
// as NCHW [rows, cols, 1, 1]: CUDNN_LAYER_NORM normalizes each n over C, H and W, which is our
// row; scale and bias are float32 [1, cols, 1, 1]; mean and inverse standard deviation (our rstd) are
// float32 [rows, 1, 1, 1]; epsilon is a host float passed by value.
#include "runtime/cuda/cudnn_layer_norm.h"

#ifdef EMBER_HAS_CUDNN

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "runtime/cuda/cuda_graph.h"
#include "runtime/cuda/cudnn_graph.h"
#include "runtime/dtype.h"
#include "runtime/error.h"
#include "runtime/tensor.h"

namespace ember::cuda {

namespace {

enum class Direction : int { Forward, Backward };
// A plan is built with the calling thread's cuDNN handle (cudnn::handle_for_current_device) and
// names that handle, so it is keyed by the handle: each thread builds and runs its own, as a
// handle must never be used by two threads at once. Handles live as long as the process, so a
// key never names a handle that has gone (a thread id would: a new thread may reuse it).
using PlanKey = std::tuple<Direction, int, DType, int64_t, int64_t, cudnnHandle_t>;

// Unique ids of the graph's tensors (the variant pack names tensors by these).
enum TensorId : int64_t {
  kX = 1, kScale, kBias, kEpsilon, kY, kMean, kInverseStd, kGradY, kGradX, kGradScale, kGradBias
};

cudnnDataType_t cudnn_dtype(DType dtype) {
  switch (dtype) {
    case kBFloat16: return CUDNN_DATA_BFLOAT16;
    case kFloat16: return CUDNN_DATA_HALF;
    default: return CUDNN_DATA_FLOAT;
  }
}

bool aligned(const void* pointer) { return reinterpret_cast<uintptr_t>(pointer) % 16 == 0; }

// Shapes and dtypes cuDNN's layer norm is asked to run; everything else stays with our kernels.
bool eligible(DType dtype, int64_t rows, int64_t cols, std::initializer_list<const void*> pointers) {
  if (dtype != kFloat32 && dtype != kBFloat16 && dtype != kFloat16) return false;  // no float64 engines
  if (rows <= 0 || cols <= 0) return false;
  for (const void* pointer : pointers)
    if (pointer == nullptr || !aligned(pointer)) return false;
  return true;
}

cudnn::Descriptor rows_tensor(int64_t id, DType dtype, int64_t rows, int64_t cols) {
  return cudnn::tensor(id, cudnn_dtype(dtype), {rows, cols, 1, 1}, {cols, 1, cols, cols});
}
// Scale, bias and their gradients are float32 for every input dtype (the engines' convention).
cudnn::Descriptor parameter_tensor(int64_t id, int64_t cols) {
  return cudnn::tensor(id, CUDNN_DATA_FLOAT, {1, cols, 1, 1}, {cols, 1, cols, cols});
}
cudnn::Descriptor statistic_tensor(int64_t id, int64_t rows) {
  return cudnn::tensor(id, CUDNN_DATA_FLOAT, {rows, 1, 1, 1}, {1, 1, 1, 1});
}

std::unique_ptr<cudnn::Plan> forward_plan(DType dtype, int64_t rows, int64_t cols, std::string& why) {
  std::vector<cudnn::Descriptor> tensors;
  tensors.push_back(rows_tensor(kX, dtype, rows, cols));
  tensors.push_back(parameter_tensor(kScale, cols));
  tensors.push_back(parameter_tensor(kBias, cols));
  tensors.push_back(cudnn::tensor(kEpsilon, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, /*by_value=*/true));
  tensors.push_back(rows_tensor(kY, dtype, rows, cols));
  tensors.push_back(statistic_tensor(kMean, rows));
  tensors.push_back(statistic_tensor(kInverseStd, rows));
  cudnn::Descriptor operation(CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR);
  const cudnnBackendNormMode_t mode = CUDNN_LAYER_NORM;
  const cudnnBackendNormFwdPhase_t phase = CUDNN_NORM_FWD_TRAINING;  // training: also writes mean and rstd
  operation.set(CUDNN_ATTR_OPERATION_NORM_FWD_MODE, CUDNN_TYPE_NORM_MODE, 1, &mode);
  operation.set(CUDNN_ATTR_OPERATION_NORM_FWD_PHASE, CUDNN_TYPE_NORM_FWD_PHASE, 1, &phase);
  operation.set_descriptor(CUDNN_ATTR_OPERATION_NORM_FWD_XDESC, tensors[0]);
  operation.set_descriptor(CUDNN_ATTR_OPERATION_NORM_FWD_SCALE_DESC, tensors[1]);
  operation.set_descriptor(CUDNN_ATTR_OPERATION_NORM_FWD_BIAS_DESC, tensors[2]);
  operation.set_descriptor(CUDNN_ATTR_OPERATION_NORM_FWD_EPSILON_DESC, tensors[3]);
  operation.set_descriptor(CUDNN_ATTR_OPERATION_NORM_FWD_YDESC, tensors[4]);
  operation.set_descriptor(CUDNN_ATTR_OPERATION_NORM_FWD_MEAN_DESC, tensors[5]);
  operation.set_descriptor(CUDNN_ATTR_OPERATION_NORM_FWD_INV_VARIANCE_DESC, tensors[6]);
  operation.finalize();
  auto plan = std::make_unique<cudnn::Plan>();
  why = cudnn::build_plan(std::move(tensors), std::move(operation), *plan);
  if (!why.empty()) return nullptr;
  return plan;
}

std::unique_ptr<cudnn::Plan> backward_plan(DType dtype, int64_t rows, int64_t cols, std::string& why) {
  std::vector<cudnn::Descriptor> tensors;
  tensors.push_back(rows_tensor(kGradY, dtype, rows, cols));
  tensors.push_back(rows_tensor(kX, dtype, rows, cols));
  tensors.push_back(statistic_tensor(kMean, rows));
  tensors.push_back(statistic_tensor(kInverseStd, rows));
  tensors.push_back(parameter_tensor(kScale, cols));
  tensors.push_back(rows_tensor(kGradX, dtype, rows, cols));
  tensors.push_back(parameter_tensor(kGradScale, cols));
  tensors.push_back(parameter_tensor(kGradBias, cols));
  cudnn::Descriptor operation(CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR);
  const cudnnBackendNormMode_t mode = CUDNN_LAYER_NORM;
  operation.set(CUDNN_ATTR_OPERATION_NORM_BWD_MODE, CUDNN_TYPE_NORM_MODE, 1, &mode);
  operation.set_descriptor(CUDNN_ATTR_OPERATION_NORM_BWD_DYDESC, tensors[0]);
  operation.set_descriptor(CUDNN_ATTR_OPERATION_NORM_BWD_XDESC, tensors[1]);
  operation.set_descriptor(CUDNN_ATTR_OPERATION_NORM_BWD_MEAN_DESC, tensors[2]);
  operation.set_descriptor(CUDNN_ATTR_OPERATION_NORM_BWD_INV_VARIANCE_DESC, tensors[3]);
  operation.set_descriptor(CUDNN_ATTR_OPERATION_NORM_BWD_SCALE_DESC, tensors[4]);
  operation.set_descriptor(CUDNN_ATTR_OPERATION_NORM_BWD_DXDESC, tensors[5]);
  operation.set_descriptor(CUDNN_ATTR_OPERATION_NORM_BWD_DSCALE_DESC, tensors[6]);
  operation.set_descriptor(CUDNN_ATTR_OPERATION_NORM_BWD_DBIAS_DESC, tensors[7]);
  operation.finalize();
  auto plan = std::make_unique<cudnn::Plan>();
  why = cudnn::build_plan(std::move(tensors), std::move(operation), *plan);
  if (!why.empty()) return nullptr;
  return plan;
}

// A plan, or why there is none.
struct CachedPlan {
  std::unique_ptr<cudnn::Plan> plan;
  std::string why;
};

// Most plans (and remembered refusals) kept; past it a new shape runs ember's kernels. Not dropped
// least recently used like the GEMM plans: a cuDNN plan may own the kernels a captured CUDA graph
// launches, so none is destroyed while the process runs. Tests lower it.
std::atomic<size_t> plan_limit{512};

std::mutex& plans_mutex() {
  static std::mutex mutex;
  return mutex;
}
// Never destroyed: a plan's destructor at process exit could run after the CUDA runtime is gone.
std::map<PlanKey, CachedPlan>& plans() {
  static auto& table = *new std::map<PlanKey, CachedPlan>;
  return table;
}

std::atomic<int64_t> forward_runs{0}, backward_runs{0};

// The cached plan for `key`, built on first use unless `may_build` is false; null when cuDNN has
// no engine for it (or it may not be built now). Building failures of the graph (cuDNN refusing
// the shape) count as "no engine" and are remembered too, with their reason
// (cudnn_layer_norm_refusal).
const cudnn::Plan* cached_plan(const PlanKey& key, bool may_build) {
  const std::lock_guard lock(plans_mutex());
  const auto found = plans().find(key);
  if (found != plans().end()) return found->second.plan.get();
  if (!may_build || plans().size() >= plan_limit.load()) return nullptr;
  const auto [direction, device, dtype, rows, cols, thread] = key;
  CachedPlan entry;
  try {
    entry.plan = direction == Direction::Forward ? forward_plan(dtype, rows, cols, entry.why)
                                                 : backward_plan(dtype, rows, cols, entry.why);
  } catch (const Error& error) {
    entry.plan = nullptr;  // e.g. a descriptor cuDNN refuses for this dtype: our kernels run instead
    entry.why = error.what();
  }
  return plans().emplace(key, std::move(entry)).first->second.plan.get();
}

// The plan for a call on the current device, or null when cuDNN cannot take it now. While this
// thread captures a CUDA graph only a handle and plan made earlier are used: creating either
// allocates device memory, which would fail or invalidate the capture (the warm-up call of
// mode="reduce_overhead" made them, unless another thread did); ember's kernels run instead.
// A handle cuDNN cannot create (a missing sub-library, say) also leaves the call to ember.
const cudnn::Plan* plan_for(Direction direction, int device_index, DType dtype, int64_t rows, int64_t cols) {
  const bool capturing = capturing_on_this_thread();
  cudnnHandle_t handle = nullptr;
  try {
    handle = cudnn::handle_for_current_device(/*create=*/!capturing);
  } catch (const Error&) {
    return nullptr;
  }
  if (handle == nullptr) return nullptr;
  return cached_plan({direction, device_index, dtype, rows, cols, handle}, /*may_build=*/!capturing);
}

// Runs `plan` with a workspace from the device's caching allocator (freed in stream order).
void run(const cudnn::Plan& plan, int device_index, void* stream, const std::vector<int64_t>& ids,
         const std::vector<void*>& pointers) {
  Tensor workspace;
  if (plan.workspace_bytes > 0)
    workspace = make_tensor({plan.workspace_bytes}, kBool, Device{DeviceType::CUDA, device_index});
  cudnn::execute(plan, stream, ids, pointers, workspace.defined() ? workspace.raw_data_ptr() : nullptr);
}

}  // namespace

bool cudnn_layer_norm_forward(const LayerNormForward& args, int device_index) {
  if (!eligible(args.dtype, args.rows, args.cols,
                {args.input, args.weight, args.bias, args.output, args.mean, args.rstd}))
    return false;
  const cudnn::Plan* plan = plan_for(Direction::Forward, device_index, args.dtype, args.rows, args.cols);
  if (plan == nullptr) return false;
  // Read from the host when the plan is launched; aligned as its descriptor declares.
  alignas(16) float epsilon = static_cast<float>(args.eps);
  run(*plan, device_index, args.stream, {kX, kScale, kBias, kEpsilon, kY, kMean, kInverseStd},
      {const_cast<void*>(args.input), const_cast<void*>(args.weight), const_cast<void*>(args.bias), &epsilon,
       args.output, args.mean, args.rstd});
  ++forward_runs;
  return true;
}

bool cudnn_layer_norm_backward(const LayerNormBackward& args, int device_index) {
  if (!eligible(args.dtype, args.rows, args.cols,
                {args.grad_output, args.input, args.mean, args.rstd, args.weight, args.grad_input, args.grad_weight,
                 args.grad_bias}))
    return false;
  const cudnn::Plan* plan = plan_for(Direction::Backward, device_index, args.dtype, args.rows, args.cols);
  if (plan == nullptr) return false;
  run(*plan, device_index, args.stream, {kGradY, kX, kMean, kInverseStd, kScale, kGradX, kGradScale, kGradBias},
      {const_cast<void*>(args.grad_output), const_cast<void*>(args.input), const_cast<void*>(args.mean),
       const_cast<void*>(args.rstd), const_cast<void*>(args.weight), args.grad_input, args.grad_weight,
       args.grad_bias});
  ++backward_runs;
  return true;
}

int64_t cudnn_layer_norm_runs(bool backward) { return backward ? backward_runs.load() : forward_runs.load(); }

std::string cudnn_layer_norm_refusal(bool backward, int device_index, DType dtype, int64_t rows, int64_t cols) {
  const std::lock_guard lock(plans_mutex());
  const auto found =
      plans().find({backward ? Direction::Backward : Direction::Forward, device_index, dtype, rows, cols,
                    cudnn::handle_for_current_device()});
  if (found != plans().end()) return found->second.why;
  if (plans().size() >= plan_limit.load())
    return fmt::format("cuDNN's plan cache is full ({} plans): new shapes run ember's kernels", plans().size());
  return {};
}

void set_cudnn_plan_limit(size_t plans) { plan_limit.store(plans); }
size_t cudnn_plan_count() {
  const std::lock_guard lock(plans_mutex());
  return plans().size();
}

}  // namespace ember::cuda

#else  // a build without cuDNN: every call stays with ember's kernels

namespace ember::cuda {
bool cudnn_layer_norm_forward(const LayerNormForward&, int) { return false; }
bool cudnn_layer_norm_backward(const LayerNormBackward&, int) { return false; }
int64_t cudnn_layer_norm_runs(bool) { return 0; }
std::string cudnn_layer_norm_refusal(bool, int, DType, int64_t, int64_t) {
  return "ember was built without cuDNN";
}
void set_cudnn_plan_limit(size_t) {}
size_t cudnn_plan_count() { return 0; }
}  // namespace ember::cuda

#endif  // EMBER_HAS_CUDNN
