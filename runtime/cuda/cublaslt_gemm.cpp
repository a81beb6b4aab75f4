// The cuBLASLt GEMM entry point: checks the problem, finds (or builds once) its cached plan and
// queues cublasLtMatmul with this thread's workspace for the stream, one GEMM per stream at a time.
// See cublaslt_gemm.h.
#include "runtime/cuda/cublaslt_gemm.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <mutex>

#include "kernels/cuda/elementwise.h"
#include "runtime/cuda/cublaslt_library.h"
#include "runtime/cuda/cublaslt_plan.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda_settings.h"
#include "runtime/error.h"
#include "runtime/lru_cache.h"

namespace ember::cuda {

namespace {

using detail::Plan;
using detail::PlanKey;

bool has_bias(Epilogue epilogue) {
  return epilogue == Epilogue::Bias || epilogue == Epilogue::BiasRelu || epilogue == Epilogue::BiasGelu;
}

// The plans of this thread: descriptors are mutated per call (the bias pointer), so threads
// never share them, and the lookup needs no lock. Bounded, least recently used dropped first
// (dynamic shapes make a key per batch size); a plan is host memory only (a captured graph keeps
// its own copy of the launch), so dropping one is always safe.
using PlanCache = LruCache<PlanKey, std::unique_ptr<Plan>, detail::PlanKeyHash>;
PlanCache& plan_cache() {
  thread_local PlanCache plans(kCachedPlansPerThread);
  return plans;
}

Plan& plan_for(const PlanKey& key, const void* bias) {
  if (std::unique_ptr<Plan>* cached = plan_cache().find(key)) return **cached;
  auto plan = std::make_unique<Plan>();
  detail::build_plan(key, bias, *plan);
  return *plan_cache().insert(key, std::move(plan));
}

// What a GEMM on a stream uses besides its plan: this thread's workspace there, and the stream's
// submission lock (cublaslt_plan.h says why each).
struct OnStream {
  void* workspace = nullptr;
  std::mutex* lock = nullptr;
};

// The stream this thread last ran a GEMM on is remembered: the tables behind it take a lock.
const OnStream& on_stream(int device, void* stream) {
  thread_local int last_device = -1;
  thread_local void* last_stream = nullptr;
  thread_local OnStream last;
  if (device != last_device || stream != last_stream) {
    last = {detail::workspace_for(device, stream), &detail::submission_lock(device, stream)};
    last_device = device;
    last_stream = stream;
  }
  return last;
}

bool output_is_packed(const GemmProblem& p) {
  return p.out_leading == p.n && (p.batch == 1 || p.out_batch_stride == p.m * p.n);
}

// out[row, col] = bias[col] for every row of every batch (out packed).
void broadcast_bias(const GemmProblem& p) {
  LaunchShape shape;
  shape.dims = 2;
  shape.sizes[0] = p.batch * p.m;
  shape.sizes[1] = p.n;
  shape.numel = p.batch * p.m * p.n;
  shape.stream = p.stream;
  StridedOperand bias;
  bias.data = p.bias;
  bias.strides[0] = 0;
  bias.strides[1] = 1;
  cuda_check(static_cast<cudaError_t>(launch_cast(p.dtype, p.out, p.dtype, bias, shape)));
}

void check_problem(const GemmProblem& p) {
  check(p.m >= 0 && p.n >= 0 && p.k >= 0 && p.batch >= 0,
        "cublaslt gemm: negative size (m {}, n {}, k {}, batch {})", p.m, p.n, p.k, p.batch);
  check(p.batch <= INT32_MAX, "cublaslt gemm: a batch of {} matrices exceeds cuBLASLt's int32 batch count", p.batch);
  check(is_floating(p.dtype), "cublaslt gemm: dtype {} is not a floating type", p.dtype);
  check(!has_bias(p.epilogue) || p.bias != nullptr, "cublaslt gemm: a bias epilogue needs a bias pointer");
  // Some epilogue kernels read the bias in 16-byte vectors; linear copies a less aligned bias.
  check(!has_bias(p.epilogue) || reinterpret_cast<uintptr_t>(p.bias) % 16 == 0,
        "cublaslt gemm: the bias at {} is not 16-byte aligned", p.bias);
  // Column-major leading dims (see cublaslt_plan.cpp): each must cover its layout's rows.
  const int64_t a_rows = p.a.transposed ? p.m : p.k;  // of a^T stored column-major
  const int64_t b_rows = p.b.transposed ? p.k : p.n;
  check(p.a.leading >= std::max<int64_t>(a_rows, 1) && p.b.leading >= std::max<int64_t>(b_rows, 1) &&
            p.out_leading >= std::max<int64_t>(p.n, 1),
        "cublaslt gemm: leading dims a {} b {} out {} too small for m {} n {} k {} (transposed a {}, b {})",
        p.a.leading, p.b.leading, p.out_leading, p.m, p.n, p.k, p.a.transposed, p.b.transposed);
}

}  // namespace

bool describe_matrix(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride, GemmMatrix& matrix) {
  if (rows == 0 || cols == 0) {  // no element is ever read: any valid layout will do
    matrix.leading = std::max<int64_t>(cols, 1);
    matrix.transposed = false;
    return true;
  }
  // A size-1 dim never steps, so its stride may be whatever makes the layout valid.
  const bool single_row = rows <= 1, single_col = cols <= 1;
  if ((col_stride == 1 || single_col) && (single_row || row_stride >= std::max<int64_t>(cols, 1))) {
    matrix.leading = single_row ? std::max<int64_t>(cols, 1) : row_stride;
    matrix.transposed = false;
    return true;
  }
  if ((row_stride == 1 || single_row) && (single_col || col_stride >= std::max<int64_t>(rows, 1))) {
    matrix.leading = single_col ? std::max<int64_t>(rows, 1) : col_stride;
    matrix.transposed = true;
    return true;
  }
  return false;
}

bool gemm(const GemmProblem& p) {
  check_problem(p);
  if (p.m == 0 || p.n == 0 || p.batch == 0) return true;
  const auto stream = static_cast<cudaStream_t>(p.stream);
  if (p.k == 0) {  // an empty sum: out = bias (or 0); relu(0) = gelu(0) = 0, activated biases are not ours
    if (p.epilogue == Epilogue::BiasRelu || p.epilogue == Epilogue::BiasGelu) return false;
    check(output_is_packed(p), "cublaslt gemm: k = 0 needs a packed output (leading {}, batch stride {})",
          p.out_leading, p.out_batch_stride);
    if (p.epilogue == Epilogue::Bias) {
      broadcast_bias(p);
    } else {
      cuda_check(cudaMemsetAsync(p.out, 0, static_cast<size_t>(p.batch * p.m * p.n) * element_size(p.dtype), stream));
    }
    return true;
  }
  const PlanKey key = detail::key_of(p, get_allow_tf32());
  Plan* plan = &plan_for(key, p.bias);
  bool bias_in_out = false;
  if (!plan->found) {
    if (p.epilogue != Epilogue::Bias && p.epilogue != Epilogue::None) return false;
    if (p.epilogue == Epilogue::None) {
      cublas_check(plan->heuristic_status);  // the heuristic's own complaint, when it made one
      fail("cublaslt gemm: cuBLASLt has no algorithm for a {} GEMM m {} n {} k {} batch {}", p.dtype, p.m, p.n,
           p.k, p.batch);
    }
    // No fused bias (e.g. float64): start out as the broadcast bias and accumulate onto it.
    check(output_is_packed(p), "cublaslt gemm: the unfused bias needs a packed output (leading {}, batch stride {})",
          p.out_leading, p.out_batch_stride);
    PlanKey plain = key;
    plain.epilogue = Epilogue::None;
    plain.align_bias = 0;
    plan = &plan_for(plain, nullptr);
    if (!plan->found) {
      cublas_check(plan->heuristic_status);
      fail("cublaslt gemm: cuBLASLt has no algorithm for a {} GEMM m {} n {} k {} batch {}", p.dtype, p.m, p.n,
           p.k, p.batch);
    }
    bias_in_out = true;
    broadcast_bias(p);
  } else if (has_bias(p.epilogue)) {
    cublas_check(cublaslt().MatmulDescSetAttribute(plan->operation, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p.bias,
                                                   sizeof p.bias));
  }
  const OnStream& resources = on_stream(p.device, p.stream);
  const double alpha_double = 1.0, beta_double = bias_in_out ? 1.0 : 0.0;
  const float alpha_float = 1.0f, beta_float = bias_in_out ? 1.0f : 0.0f;
  const void* alpha = plan->double_scale ? static_cast<const void*>(&alpha_double) : &alpha_float;
  const void* beta = plan->double_scale ? static_cast<const void*>(&beta_double) : &beta_float;
  // cuBLASLt's A is our b and its B our a (cublaslt_plan.cpp); C and D are both out.
  const std::lock_guard one_gemm_at_a_time(*resources.lock);
  cublas_check(cublaslt().Matmul(detail::handle_for(p.device), plan->operation, alpha, p.b.data, plan->a_layout,
                                 p.a.data, plan->b_layout, beta, p.out, plan->out_layout, p.out, plan->out_layout,
                                 &plan->algorithm, resources.workspace, plan->workspace_bytes, stream));
  return true;
}

void prepare_gemm_for_capture(int device, void* stream) {
  detail::handle_for(device);
  detail::workspace_for(device, stream);
  detail::submission_lock(device, stream);
}

int64_t cached_plan_count() { return static_cast<int64_t>(plan_cache().size()); }

}  // namespace ember::cuda
