// CUDA amax and amin (compared in the compute type: exact, no rounding) and their gradient,
// extremum_backward: the upstream gradient shared equally among the elements equal to the result
// (one pass per output group, or, for few long groups, ties counted in shares first).
#include "kernels/cuda/reduce_kernels.cuh"

namespace ember::cuda {

namespace detail {

namespace {

template <typename C> __device__ __forceinline__ bool is_tie(C value, C target) {
  return value == target || (fn::is_nan(target) && fn::is_nan(value));
}

// One thread per output element walks its group twice: count the ties, then write every
// element. Used when inner > 1, where adjacent threads read adjacent columns.
template <typename T>
__global__ void extremum_backward_columns(const T* grad, const T* input, const T* result, T* grad_input,
                                          ReduceLayout layout) {
  using C = compute_t<T>;
  const int64_t outputs = layout.outer * layout.inner;
  for (int64_t output = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; output < outputs;
       output += int64_t{blockDim.x} * gridDim.x) {
    const int64_t o = output / layout.inner;
    const int64_t i = output % layout.inner;
    const C target = load(result, output);
    int64_t ties = 0;
    for (int64_t r = 0; r < layout.reduce; ++r) ties += is_tie(load(input, (o * layout.reduce + r) * layout.inner + i), target);
    const C share = load(grad, output) / static_cast<C>(ties > 1 ? ties : 1);
    for (int64_t r = 0; r < layout.reduce; ++r) {
      const int64_t at = (o * layout.reduce + r) * layout.inner + i;
      grad_input[at] = to_output<T>(is_tie(load(input, at), target) ? share : C(0));
    }
  }
}

// inner == 1: one warp per output element, its lanes striding through the contiguous group.
template <typename T>
__global__ void extremum_backward_rows(const T* grad, const T* input, const T* result, T* grad_input,
                                       ReduceLayout layout) {
  using C = compute_t<T>;
  const int lane = threadIdx.x % 32;
  const int64_t warps = int64_t{blockDim.x} / 32 * gridDim.x;
  for (int64_t row = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) / 32; row < layout.outer; row += warps) {
    const C target = load(result, row);
    const T* data = input + row * layout.reduce;
    int64_t ties = 0;
    for (int64_t r = lane; r < layout.reduce; r += 32) ties += is_tie(load(data, r), target);
    ties = warp_all_reduce(ties, AddOp{});  // integer sum: exact in any order
    const C share = load(grad, row) / static_cast<C>(ties > 1 ? ties : 1);
    T* out = grad_input + row * layout.reduce;
    for (int64_t r = lane; r < layout.reduce; r += 32) out[r] = to_output<T>(is_tie(load(data, r), target) ? share : C(0));
  }
}

// Few outputs over long groups (a whole-tensor amax, say) would leave the kernels above one
// thread or warp walking millions of elements on an idle GPU. Then many threads count each
// group's ties, each a strided share of the group with one atomic add (integers: exact in any
// order), and one thread per element writes the gradient, with the same arithmetic as above.
template <typename T>
__global__ void count_ties(const T* input, const T* result, unsigned long long* ties, ReduceLayout layout,
                           int64_t shares) {
  using C = compute_t<T>;
  const int64_t outputs = layout.outer * layout.inner;
  const bool rows = layout.inner == 1;
  for (int64_t item = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; item < outputs * shares;
       item += int64_t{blockDim.x} * gridDim.x) {
    // Adjacent threads read adjacent elements: adjacent shares of one contiguous group, or the
    // same share of adjacent columns.
    const int64_t output = rows ? item / shares : item % outputs;
    const int64_t share = rows ? item % shares : item / outputs;
    const int64_t o = output / layout.inner;
    const int64_t i = output % layout.inner;
    const C target = load(result, output);
    unsigned long long count = 0;
    for (int64_t r = share; r < layout.reduce; r += shares)
      count += is_tie(load(input, (o * layout.reduce + r) * layout.inner + i), target);
    if (count > 0) atomicAdd(ties + output, count);
  }
}

template <typename T>
__global__ void share_gradient(const T* grad, const T* input, const T* result, const unsigned long long* ties,
                               T* grad_input, ReduceLayout layout) {
  using C = compute_t<T>;
  const int64_t group = layout.reduce * layout.inner;
  for (int64_t at = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; at < layout.outer * group;
       at += int64_t{blockDim.x} * gridDim.x) {
    const int64_t output = at / group * layout.inner + at % layout.inner;
    const C target = load(result, output);
    const unsigned long long count = ties[output];
    const C share = load(grad, output) / static_cast<C>(count > 1 ? count : 1);
    grad_input[at] = to_output<T>(is_tie(load(input, at), target) ? share : C(0));
  }
}

constexpr int64_t kBusyThreads = int64_t{1} << 18;  // about what an H200 keeps in flight
constexpr int64_t kMinTieShare = 64;                // elements per share, at least

// Shares per group for count_ties, or 1 when the one-pass kernels keep the GPU busy enough.
int64_t tie_shares(const ReduceLayout& layout) {
  const int64_t outputs = layout.outer * layout.inner;
  const int64_t threads = layout.inner == 1 ? outputs * 32 : outputs;  // of the one-pass kernels
  if (outputs == 0 || threads >= kBusyThreads || layout.reduce < 2 * kMinTieShare) return 1;
  const int64_t most = layout.reduce / kMinTieShare;
  const int64_t wanted = ceil_div(kBusyThreads, outputs);
  return wanted < most ? wanted : most;
}

}  // namespace

int launch_extremum_family(ReduceKind kind, DType dtype, const void* input, void* output, void* scratch,
                           const ReduceLayout& layout) {
  int status = 0;
  dispatch_all(dtype, [&](auto zero) {
    using T = decltype(zero);
    using C = compute_t<T>;
    const T* typed_input = static_cast<const T*>(input);
    T* typed_output = static_cast<T*>(output);
    if (kind == ReduceKind::Max) {
      status = run_reduce(typed_input, typed_output, scratch, layout, FunctorReducer<C, fn::MaxReduce>{});
    } else {
      status = run_reduce(typed_input, typed_output, scratch, layout, FunctorReducer<C, fn::MinReduce>{});
    }
  });
  return status;
}

}  // namespace detail

int64_t extremum_backward_scratch_bytes(const ReduceLayout& layout) {
  const int64_t shares = detail::tie_shares(layout);
  return shares > 1 ? layout.outer * layout.inner * int64_t{sizeof(unsigned long long)} : 0;
}

int launch_extremum_backward(DType dtype, const void* grad, const void* input, const void* result,
                             void* grad_input, void* scratch, const ReduceLayout& layout) {
  if (layout.outer * layout.inner * layout.reduce == 0) return 0;
  const auto stream = static_cast<cudaStream_t>(layout.stream);
  const int64_t shares = detail::tie_shares(layout);
  if (shares > 1) {
    const int64_t outputs = layout.outer * layout.inner;
    auto* ties = static_cast<unsigned long long*>(scratch);
    const cudaError_t cleared = cudaMemsetAsync(ties, 0, static_cast<size_t>(outputs) * sizeof(*ties), stream);
    if (cleared != cudaSuccess) return static_cast<int>(cleared);
  }
  detail::dispatch_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    const T* typed_grad = static_cast<const T*>(grad);
    const T* typed_input = static_cast<const T*>(input);
    const T* typed_result = static_cast<const T*>(result);
    T* typed_out = static_cast<T*>(grad_input);
    if (shares > 1) {
      auto* ties = static_cast<unsigned long long*>(scratch);
      const int64_t items = layout.outer * layout.inner * shares;
      detail::count_ties<<<detail::grid_for(detail::ceil_div(items, detail::kBlock), 65536), detail::kBlock, 0,
                           stream>>>(typed_input, typed_result, ties, layout, shares);
      const int64_t elements = layout.outer * layout.reduce * layout.inner;
      detail::share_gradient<<<detail::grid_for(detail::ceil_div(elements, detail::kBlock), 65536), detail::kBlock,
                               0, stream>>>(typed_grad, typed_input, typed_result, ties, typed_out, layout);
    } else if (layout.inner == 1) {
      const int64_t blocks = detail::ceil_div(layout.outer, detail::kBlock / 32);
      detail::extremum_backward_rows<<<detail::grid_for(blocks, 65536), detail::kBlock, 0, stream>>>(
          typed_grad, typed_input, typed_result, typed_out, layout);
    } else {
      const int64_t blocks = detail::ceil_div(layout.outer * layout.inner, detail::kBlock);
      detail::extremum_backward_columns<<<detail::grid_for(blocks, 65536), detail::kBlock, 0, stream>>>(
          typed_grad, typed_input, typed_result, typed_out, layout);
    }
  });
  return detail::status_of_launch();
}

}  // namespace ember::cuda
