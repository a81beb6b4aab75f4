// Building cuBLASLt GEMM plans: the row-major -> column-major mapping, the epilogue and compute
// types, the heuristic query; plus the per-device handles and per-stream workspaces. See
// cublaslt_plan.h.
#include "runtime/cuda/cublaslt_plan.h"

#include <bit>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <utility>

#include "runtime/cuda/cublaslt_library.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/thread_handle_pool.h"
#include "runtime/error.h"

namespace ember::cuda::detail {

namespace {

cudaDataType_t data_type_of(DType dtype) {
  switch (dtype) {
    case kFloat32: return CUDA_R_32F;
    case kFloat64: return CUDA_R_64F;
    case kBFloat16: return CUDA_R_16BF;
    case kFloat16: return CUDA_R_16F;
    default: fail("cublaslt gemm: dtype {} is not a floating type cuBLASLt multiplies", dtype);
  }
}

cublasLtEpilogue_t epilogue_of(Epilogue epilogue) {
  switch (epilogue) {
    case Epilogue::None: return CUBLASLT_EPILOGUE_DEFAULT;
    case Epilogue::Bias: return CUBLASLT_EPILOGUE_BIAS;
    case Epilogue::Relu: return CUBLASLT_EPILOGUE_RELU;
    case Epilogue::BiasRelu: return CUBLASLT_EPILOGUE_RELU_BIAS;
    case Epilogue::Gelu: return CUBLASLT_EPILOGUE_GELU;
    case Epilogue::BiasGelu: return CUBLASLT_EPILOGUE_GELU_BIAS;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

bool has_bias(Epilogue epilogue) {
  return epilogue == Epilogue::Bias || epilogue == Epilogue::BiasRelu || epilogue == Epilogue::BiasGelu;
}

// Largest power of two (at most 256, the most any algorithm asks for) dividing every address
// the operand's matrices start at.
uint32_t alignment_of(const void* pointer, int64_t batch_stride_bytes, int64_t batch) {
  uint64_t bits = reinterpret_cast<uintptr_t>(pointer) | 256u;
  if (batch > 1) bits |= static_cast<uint64_t>(batch_stride_bytes);
  return static_cast<uint32_t>(uint64_t{1} << std::countr_zero(bits));
}

template <typename Value>
void set_attribute(cublasLtMatmulDesc_t operation, cublasLtMatmulDescAttributes_t attribute, const Value& value) {
  cublas_check(cublaslt().MatmulDescSetAttribute(operation, attribute, &value, sizeof value));
}

// A column-major rows x cols layout with `batch` matrices `stride` elements apart.
cublasLtMatrixLayout_t make_layout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t leading,
                                   int64_t batch, int64_t stride) {
  cublasLtMatrixLayout_t layout = nullptr;
  const CublasLt& lt = cublaslt();
  cublas_check(lt.MatrixLayoutCreate(&layout, type, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), leading));
  if (batch > 1) {
    const int32_t count = static_cast<int32_t>(batch);
    cublas_check(lt.MatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
    cublas_check(
        lt.MatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
  }
  return layout;
}

}  // namespace

size_t PlanKeyHash::operator()(const PlanKey& key) const {
  uint64_t hash = 1469598103934665603ull;  // FNV-1a over the fields, one 64-bit word at a time
  auto mix = [&hash](uint64_t value) { hash = (hash ^ value) * 1099511628211ull; };
  mix(static_cast<uint64_t>(key.dtype) | static_cast<uint64_t>(key.epilogue) << 8 | uint64_t{key.tf32} << 16 |
      uint64_t{key.transposed_a} << 17 | uint64_t{key.transposed_b} << 18 |
      static_cast<uint64_t>(key.device) << 24);
  for (int64_t value : {key.m, key.n, key.k, key.batch, key.leading_a, key.leading_b, key.leading_out, key.stride_a,
                        key.stride_b, key.stride_out})
    mix(static_cast<uint64_t>(value));
  mix(uint64_t{key.align_a} | uint64_t{key.align_b} << 16 | uint64_t{key.align_out} << 32 |
      uint64_t{key.align_bias} << 48);
  return hash;
}

Plan::~Plan() {
  // Host-side objects only: safe even after the device is gone at process exit.
  if (operation) cublaslt().MatmulDescDestroy(operation);
  if (a_layout) cublaslt().MatrixLayoutDestroy(a_layout);
  if (b_layout) cublaslt().MatrixLayoutDestroy(b_layout);
  if (out_layout) cublaslt().MatrixLayoutDestroy(out_layout);
}

PlanKey key_of(const GemmProblem& problem, bool tf32) {
  const int64_t element = static_cast<int64_t>(element_size(problem.dtype));
  PlanKey key;
  key.dtype = problem.dtype;
  key.epilogue = problem.epilogue;
  key.tf32 = tf32 && problem.dtype == kFloat32;
  key.transposed_a = problem.a.transposed;
  key.transposed_b = problem.b.transposed;
  key.device = problem.device;
  key.m = problem.m;
  key.n = problem.n;
  key.k = problem.k;
  key.batch = problem.batch;
  key.leading_a = problem.a.leading;
  key.leading_b = problem.b.leading;
  key.leading_out = problem.out_leading;
  key.stride_a = problem.batch > 1 ? problem.a.batch_stride : 0;
  key.stride_b = problem.batch > 1 ? problem.b.batch_stride : 0;
  key.stride_out = problem.batch > 1 ? problem.out_batch_stride : 0;
  key.align_a = alignment_of(problem.a.data, key.stride_a * element, problem.batch);
  key.align_b = alignment_of(problem.b.data, key.stride_b * element, problem.batch);
  key.align_out = alignment_of(problem.out, key.stride_out * element, problem.batch);
  key.align_bias = has_bias(problem.epilogue) ? alignment_of(problem.bias, 0, 1) : 0;
  return key;
}

// Row-major out = a . b is column-major out^T = b^T . a^T: cuBLASLt's A is our b, its B our a,
// and its m, n are our n, m. A row-major matrix read in place is its transpose in column-major
// terms, so an operand stored untransposed takes CUBLAS_OP_N and a stored transpose CUBLAS_OP_T.
// The bias runs along cuBLASLt's rows of D, which are our columns: one value per output feature.
void build_plan(const PlanKey& key, const void* bias, Plan& plan) {
  const cudaDataType_t type = data_type_of(key.dtype);
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cudaDataType_t scale = CUDA_R_32F;
  if (key.dtype == kFloat64) {
    compute = CUBLAS_COMPUTE_64F;
    scale = CUDA_R_64F;
  } else if (key.tf32) {
    compute = CUBLAS_COMPUTE_32F_FAST_TF32;
  }
  plan.double_scale = key.dtype == kFloat64;
  cublas_check(cublaslt().MatmulDescCreate(&plan.operation, compute, scale));
  const int32_t transpose_a = key.transposed_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int32_t transpose_b = key.transposed_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  set_attribute(plan.operation, CUBLASLT_MATMUL_DESC_TRANSA, transpose_a);
  set_attribute(plan.operation, CUBLASLT_MATMUL_DESC_TRANSB, transpose_b);
  set_attribute(plan.operation, CUBLASLT_MATMUL_DESC_EPILOGUE, static_cast<uint32_t>(epilogue_of(key.epilogue)));
  if (has_bias(key.epilogue)) {
    // The bias has the output's dtype (bf16 bias for a bf16 GEMM), as linear's shape rule demands.
    set_attribute(plan.operation, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, static_cast<int32_t>(type));
    set_attribute(plan.operation, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
  }
  // cuBLASLt's A is op(A) = b^T (n x k): stored as n x k (N) or as k x n (T).
  plan.a_layout = key.transposed_b ? make_layout(type, key.k, key.n, key.leading_b, key.batch, key.stride_b)
                                   : make_layout(type, key.n, key.k, key.leading_b, key.batch, key.stride_b);
  // cuBLASLt's B is op(B) = a^T (k x m): stored as k x m (N) or as m x k (T).
  plan.b_layout = key.transposed_a ? make_layout(type, key.m, key.k, key.leading_a, key.batch, key.stride_a)
                                   : make_layout(type, key.k, key.m, key.leading_a, key.batch, key.stride_a);
  plan.out_layout = make_layout(type, key.n, key.m, key.leading_out, key.batch, key.stride_out);

  cublasLtMatmulPreference_t preference = nullptr;
  cublas_check(cublaslt().MatmulPreferenceCreate(&preference));
  const uint64_t workspace = kWorkspaceBytes;
  const auto set_preference = [&](cublasLtMatmulPreferenceAttributes_t attribute, const auto& value) {
    cublas_check(cublaslt().MatmulPreferenceSetAttribute(preference, attribute, &value, sizeof value));
  };
  set_preference(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, workspace);
  // cuBLASLt's A/B are our b/a; C and D are both `out`.
  set_preference(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.align_b);
  set_preference(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.align_a);
  set_preference(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.align_out);
  set_preference(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.align_out);
  // A split-K algorithm may add its partial sums in the output type (INPLACE, OUTPUT_TYPE): for
  // bf16/fp16 that breaks "16-bit GEMMs accumulate in fp32", most for the weight gradients' long
  // k. Those keep the partials in the fp32 compute type.
  if (key.dtype == kBFloat16 || key.dtype == kFloat16) {
    const uint32_t schemes = CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    set_preference(CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, schemes);
  }
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  const cublasStatus_t status =
      cublaslt().MatmulAlgoGetHeuristic(handle_for(key.device), plan.operation, plan.a_layout, plan.b_layout,
                                        plan.out_layout, plan.out_layout, preference, 1, &result, &returned);
  cublaslt().MatmulPreferenceDestroy(preference);
  // A failed query is "no algorithm for this configuration" (e.g. an epilogue float64 lacks is
  // NOT_SUPPORTED or INVALID_VALUE depending on the version): gemm() falls back or reports it.
  plan.heuristic_status = status;
  plan.found = status == CUBLAS_STATUS_SUCCESS && returned > 0;
  if (plan.found) {
    plan.algorithm = result.algo;
    plan.workspace_bytes = result.workspaceSize;
  }
}

namespace {

cublasLtHandle_t create_handle(int device) {
  DeviceGuard guard(Device(DeviceType::CUDA, device));
  cublasLtHandle_t handle = nullptr;
  cublas_check(cublaslt().Create(&handle));
  return handle;
}

}  // namespace

cublasLtHandle_t handle_for(int device) {
  // Per thread as well as per device: a handle is then never used by two threads at once; an
  // exited thread's handle serves the next new one (thread_handle_pool.h).
  return ThreadHandlePool<cublasLtHandle_t>::of(create_handle).for_this_thread(device);
}

void* workspace_for(int device, void* stream) {
  // The map is shared by every thread, so guarded; gemm() remembers the last answer per thread,
  // so this runs only when the thread's stream changes.
  static std::mutex mutex;
  static auto* workspaces = new std::map<std::tuple<int, void*, cublasLtHandle_t>, void*>();
  const cublasLtHandle_t handle = handle_for(device);  // this thread's alone
  const std::lock_guard lock(mutex);
  void*& workspace = (*workspaces)[{device, stream, handle}];
  if (workspace == nullptr) {
    DeviceGuard guard(Device(DeviceType::CUDA, device));
    const auto stream_id = reinterpret_cast<StreamId>(stream);
    workspace = device_allocator(device).allocate(kWorkspaceBytes, stream_id).pointer;
  }
  return workspace;
}

std::mutex& submission_lock(int device, void* stream) {
  static std::mutex mutex;
  static auto* locks = new std::map<std::pair<int, void*>, std::unique_ptr<std::mutex>>();
  const std::lock_guard lock(mutex);
  std::unique_ptr<std::mutex>& found = (*locks)[{device, stream}];
  if (!found) found = std::make_unique<std::mutex>();
  return *found;
}

}  // namespace ember::cuda::detail
