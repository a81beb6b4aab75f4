// Internal to the cuBLASLt wrapper: a GEMM plan (operation descriptor, matrix layouts and the
// heuristic's best algorithm for one problem shape), the key plans are cached by, and the
// per-device handle and per-stream workspace they run with. Used by cublaslt_gemm.cpp and the
// raw benchmark in cublaslt_benchmark.cpp so both time exactly the same cuBLASLt call.
#pragma once

#include <cublasLt.h>

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "runtime/cuda/cublaslt_gemm.h"

namespace ember::cuda::detail {

// Every algorithm may use up to this much scratch memory: enough for cuBLASLt's split-K and
// stream-K Hopper kernels at large sizes, small next to any GPU's memory.
constexpr size_t kWorkspaceBytes = size_t{32} << 20;

// Everything cuBLASLt's choice of algorithm depends on. Pointers enter only through their
// alignment (the heuristic excludes algorithms the operands are not aligned enough for).
struct PlanKey {
  DType dtype = kFloat32;
  Epilogue epilogue = Epilogue::None;
  bool tf32 = false;
  bool transposed_a = false, transposed_b = false;
  int device = 0;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  int64_t leading_a = 0, leading_b = 0, leading_out = 0;
  int64_t stride_a = 0, stride_b = 0, stride_out = 0;
  uint32_t align_a = 0, align_b = 0, align_out = 0, align_bias = 0;

  bool operator==(const PlanKey&) const = default;
};

struct PlanKeyHash {
  size_t operator()(const PlanKey& key) const;
};

// Descriptors live as long as the plan; a plan is built once per key and thread.
struct Plan {
  cublasLtMatmulDesc_t operation = nullptr;
  cublasLtMatrixLayout_t a_layout = nullptr;  // cuBLASLt's A: our b (see cublaslt_gemm.cpp)
  cublasLtMatrixLayout_t b_layout = nullptr;  // cuBLASLt's B: our a
  cublasLtMatrixLayout_t out_layout = nullptr;
  cublasLtMatmulAlgo_t algorithm{};
  size_t workspace_bytes = 0;
  bool found = false;  // the heuristic returned an algorithm for this epilogue
  bool double_scale = false;  // alpha/beta are doubles (float64), else floats
  cublasStatus_t heuristic_status = CUBLAS_STATUS_SUCCESS;

  Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan();
};

// The key of `problem` (alignments taken from its pointers and batch strides).
PlanKey key_of(const GemmProblem& problem, bool tf32);

// Builds the descriptors of `key` and asks the heuristic for its best algorithm (plan.found
// false when there is none); `bias` is the bias pointer the heuristic sees, for its alignment.
void build_plan(const PlanKey& key, const void* bias, Plan& plan);

// This thread's cuBLASLt handle for `device` (created on first use, kept for the thread's life).
cublasLtHandle_t handle_for(int device);

// A kWorkspaceBytes block of `device` memory reserved for this thread's GEMMs on `stream`: keyed
// by stream and handle, as PyTorch keys its own, so no block is ever in two threads' calls at
// once, whatever a call queues (this and the lock below are what passed on the H200). An exited
// thread's block serves the next thread that takes its handle. Taken once from the caching
// allocator, never freed: 32 MiB per stream and thread that ran a GEMM there.
void* workspace_for(int device, void* stream);

// Held while one GEMM's work is queued on `stream` of `device`: two threads whose cublasLtMatmul
// calls on one stream (the legacy one, say) overlapped got each other's products on an H200, even
// with a workspace each; serialized, or on streams of their own, they did not. One per stream for
// the process's life.
std::mutex& submission_lock(int device, void* stream);

}  // namespace ember::cuda::detail
