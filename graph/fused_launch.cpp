// Operands, CUDA argument blocks and launch shapes of fused nodes (see fused_launch.h).
#include "graph/fused_launch.h"

#include <algorithm>

namespace ember::graph {

namespace {

// Element strides of `tensor` read over `shape`: 0 on leading and size-1 (broadcast) dims.
Dims broadcast_strides(const Tensor& tensor, const Dims& shape) {
  Dims strides = Dims::filled(shape.size(), 0);
  const int lead = shape.size() - tensor.dim();
  for (int d = 0; d < tensor.dim(); ++d)
    strides[lead + d] = tensor.sizes()[d] == 1 ? 0 : tensor.strides()[d];
  return strides;
}

unsigned at_most(int64_t value, int64_t limit) { return static_cast<unsigned>(std::min(value, limit)); }

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Enough blocks to fill an H200 (132 SMs) several times over; more loop in the kernel.
constexpr int64_t kMaxGrid = 4096;

// A grid-stride loop over `elements` in 1-D blocks of 256 threads.
FusedCudaLaunch grid_stride_launch(int64_t elements) {
  FusedCudaLaunch launch;
  launch.block_x = 256;
  launch.grid = at_most(ceil_div(elements, launch.block_x), kMaxGrid);
  return launch;
}

}  // namespace

void fill_fused_operands(const FusedGroup& group, const OpCall& call, TensorList& outputs, FusedOperands& operands) {
  const int rank = group.shape.size();
  const size_t inputs = group.inputs.size();
  operands.contiguous = true;
  operands.data.resize(1 + inputs + group.exports.size());
  operands.data[0] = static_cast<char*>(outputs[0].raw_data_ptr());
  for (size_t e = 0; e < group.exports.size(); ++e)
    operands.data[1 + inputs + e] = static_cast<char*>(outputs[static_cast<int>(e + 1)].raw_data_ptr());
  operands.strides.resize((1 + inputs) * static_cast<size_t>(rank));
  int64_t stride = 1;  // output 0 is fresh and contiguous over the kept dims
  for (int d = rank - 1; d >= 0; --d) {
    const bool reduced = ((group.reduced_dims >> d) & 1u) != 0;
    operands.strides[d] = reduced ? 0 : stride;
    if (!reduced) stride *= group.shape[d];
  }
  for (size_t k = 0; k < inputs; ++k) {
    const Tensor& input = call.input(static_cast<int>(k));
    operands.data[k + 1] = static_cast<char*>(input.raw_data_ptr());
    const Dims strides = broadcast_strides(input, group.shape);
    for (int d = 0; d < rank; ++d) operands.strides[(k + 1) * rank + d] = strides[d];
    operands.contiguous = operands.contiguous && input.sizes() == group.shape && input.is_contiguous();
  }
}

int64_t fused_cuda_stride_words(const FusedGroup& group) {
  return std::max<int64_t>(1, static_cast<int64_t>(group.inputs.size()) * group.shape.size());
}

int64_t fused_cuda_argument_words(const FusedGroup& group) {
  const int64_t pointers = 1 + static_cast<int64_t>(group.inputs.size() + group.exports.size());
  const int64_t sizes = group.dynamic_dims == 0 ? 0 : group.shape.size();
  const int64_t pieces = group.root == FusedRoot::None ? 0 : 2;
  return pointers + fused_cuda_stride_words(group) + sizes + pieces + 1;
}

void fill_fused_cuda_arguments(const FusedGroup& group, const FusedOperands& operands, FusedPieceSums pieces,
                               std::vector<uint64_t>& words) {
  static_assert(sizeof(char*) == sizeof(uint64_t) && sizeof(int64_t) == sizeof(uint64_t));
  words.clear();
  words.reserve(static_cast<size_t>(fused_cuda_argument_words(group)));
  for (char* pointer : operands.data) words.push_back(reinterpret_cast<uint64_t>(pointer));
  const size_t output_strides = group.shape.size();  // the kernel indexes outputs by element number
  for (size_t i = output_strides; i < operands.strides.size(); ++i)
    words.push_back(static_cast<uint64_t>(operands.strides[i]));
  if (operands.strides.size() == output_strides) words.push_back(0);
  if (group.dynamic_dims != 0)
    for (int d = 0; d < group.shape.size(); ++d) words.push_back(static_cast<uint64_t>(group.shape[d]));
  if (group.root != FusedRoot::None) {
    words.push_back(reinterpret_cast<uint64_t>(pieces.sums));
    words.push_back(static_cast<uint64_t>(pieces.pieces));
  }
  internal_assert(group.root != FusedRoot::None || pieces.pieces == 1,
                  "fused CUDA arguments: pieces of a pointwise group");
  internal_assert(pieces.pieces == 1 || pieces.sums != nullptr, "fused CUDA arguments: split without piece sums");
  words.push_back(operands.contiguous ? 1 : 0);
  internal_assert(static_cast<int64_t>(words.size()) == fused_cuda_argument_words(group),
                  "fused CUDA arguments: the operands do not match the group");
}

FusedExtent fused_extent(const FusedGroup& group) {
  FusedExtent extent;
  const int rank = group.shape.size();
  for (int d = 0; d < rank; ++d) {
    const bool reduced = group.root != FusedRoot::None && ((group.reduced_dims >> d) & 1u) != 0;
    (reduced ? extent.count : extent.outputs) *= group.shape[d];
  }
  extent.inner_reduced = group.root != FusedRoot::None && rank > 0 && ((group.reduced_dims >> (rank - 1)) & 1u) != 0;
  return extent;
}

FusedCudaLaunch fused_cuda_launch(const FusedGroup& group) {
  // A split reduction's figures are eager's (kernels/cuda/reduce_kernels.cuh): about 1024 blocks
  // of 256 threads in all, pieces of at least 256 rows of columns or 4096 elements of a row.
  constexpr int64_t kTargetThreads = 1024 * 256;
  constexpr int64_t kMinColumnPiece = 256;
  constexpr int64_t kMinRowPiece = 4096;
  constexpr int64_t kMaxPieces = 1024;
  const FusedExtent extent = fused_extent(group);
  if (group.root == FusedRoot::None) return grid_stride_launch(extent.outputs);
  FusedCudaLaunch launch;
  // Threads that split one output's elements: a power of two up to a warp, no more than needed.
  unsigned split = 1;
  while (split < 32 && static_cast<int64_t>(split) < extent.count) split *= 2;
  if (extent.inner_reduced) {  // x splits (adjacent elements), y walks outputs: up to 256 threads
    unsigned rows = 1;  // outputs per block: a power of two, no more than there are
    while (rows < 256 / split && static_cast<int64_t>(rows) < extent.outputs) rows *= 2;
    // Threads fewer outputs leave over split the elements further (a whole-tensor sum: 256 x 1).
    while (split * rows < 256 && static_cast<int64_t>(split) < extent.count) split *= 2;
    launch.block_x = split;
    launch.block_y = rows;
  } else {  // x walks adjacent outputs, y splits: up to 32 x 32
    launch.block_x = 32;
    launch.block_y = split;
  }
  const unsigned across = extent.inner_reduced ? launch.block_y : launch.block_x;
  const int64_t tiles = ceil_div(extent.outputs, across);
  launch.grid = at_most(tiles, kMaxGrid);
  const int64_t longest = ceil_div(extent.count, extent.inner_reduced ? kMinRowPiece : kMinColumnPiece);
  if (tiles == 0 || longest < 2) return launch;
  // Split columns run in eager's 32 x 8 blocks: the pieces, not the threads of one block, cover
  // the rows.
  const unsigned split_block_y = extent.inner_reduced ? launch.block_y : std::min(launch.block_y, 8u);
  const int64_t wanted = ceil_div(kTargetThreads, tiles * launch.block_x * split_block_y);
  const int64_t pieces = std::min({wanted, longest, kMaxPieces});
  if (pieces >= 2) {
    launch.block_y = split_block_y;
    launch.pieces = static_cast<unsigned>(pieces);
  }
  return launch;
}

FusedCudaLaunch finish_launch(const FusedGroup& group) { return grid_stride_launch(fused_extent(group).outputs); }

}  // namespace ember::graph
