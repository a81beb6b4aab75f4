// The fusion pass: maximal groups of pointwise nodes (optionally rooted at a sum/mean) become one
// node, with up to kMaxFusedOutputs outputs, whose OpDef, synthesized here and owned by the graph,
// runs generated code (codegen_cpp.h).
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/ir.h"

namespace ember::graph {

// One op of a group, in execution order. Operand k refers to the group's external input k when
// k < number of inputs, otherwise to step (k - number of inputs).
struct FusedStep {
  std::string op;       // registry name, for dumps and logs
  std::string functor;  // C++ construction expression: "ember::fn::Add{0x1p+0}"
  std::vector<int> operands;
  DType dtype = DType::Float32;  // of the step's value: the group's dtype, or bool
};

enum class FusedRoot : uint8_t { None, Sum, Mean };

struct CompiledModule;     // a loaded .so (codegen_cpp.h)
struct FusedCudaProgram;   // NVRTC output, loaded per device (graph/cuda/fused_cuda_program.h)

// The description of one fused group: everything the code generator and the kernel need. Output 0
// is the root's value (or the reduced one); outputs 1.. are the `exports`: member values that
// nodes outside the group also read, written by the same kernel so nothing is computed twice.
struct FusedGroup {
  std::string name;                // "fused_3": the OpDef's name and the generated function's
  // The floating dtype the group computes in. Every input, intermediate and output is of it or
  // bool: bool values (comparisons, isnan, masks) travel through the body as 0 and 1 of it.
  DType dtype = DType::Float32;
  Device device;                   // where every operand lives: the CPU or one CUDA device
  Dims shape;                      // the iteration shape (the pointwise shape)
  std::vector<TensorMeta> inputs;  // external inputs, each broadcastable to `shape`
  std::vector<FusedStep> steps;    // the last step's value is the result (or the reduced one)
  FusedRoot root = FusedRoot::None;
  uint32_t reduced_dims = 0;       // bit d: dim d of `shape` is reduced (root Sum/Mean)
  // Bit d: dim d of `shape` is a dynamic size (FusionOptions::dynamic_sizes). The generated code
  // reads it at run time instead of baking it in, so captures at other sizes share the kernel.
  uint32_t dynamic_dims = 0;
  TensorMeta output;               // the node's output 0 type
  std::vector<int> exports;        // steps whose values are outputs 1.. ({shape, export_dtype} each)

  std::string summary() const;     // "relu_backward+mul+sum"
  DType export_dtype(size_t e) const;  // bool for a bool step, else `dtype`
};

// The synthesized OpDef of a fused node. Its kernel finds the group and the compiled code
// through call.op (OpDef kernels are plain function pointers, so the op carries the state): on
// the CPU a function of a loaded .so, on CUDA a kernel of an NVRTC-compiled program.
struct FusedOpDef : OpDef {
  FusedGroup group;
  std::shared_ptr<CompiledModule> module;  // CPU: keeps the .so loaded while the graph lives
  void* function = nullptr;                // CPU: the generated entry point in `module`
  std::shared_ptr<FusedCudaProgram> cuda;  // CUDA: the program holding this group's kernel
  // CUDA: per device index, the loaded library (an ember::cuda::KernelLibrary) and this group's
  // kernel in it (and a reduction's finishing kernel), set at the first launch there, so later
  // launches take no lock.
  struct CudaHandles {
    std::atomic<const void*> library{nullptr};
    std::atomic<void*> kernel{nullptr};
    std::atomic<void*> finish{nullptr};
  };
  mutable std::array<CudaHandles, 16> cuda_handles;
};

// The shape rule and CPU kernel every FusedOpDef uses (graph/fusion_ops.cpp).
void fused_shape(const OpCall& call, OutputMetas& outputs);
void fused_cpu_kernel(const OpCall& call, TensorList& outputs);

// `op` as the fused op it is, or null for any other op (every FusedOpDef has fused_shape's rule).
const FusedOpDef* as_fused(const OpDef& op);

// The fused nodes' ops of `graph`, in node order.
std::vector<const FusedOpDef*> fused_ops(const Graph& graph);

// How an op is called in generated code: its functor construction expression from the node's
// attributes, or "" with `reason` set when the code generator cannot express it.
std::string functor_expression(const OpDef& op, const Attrs& attrs, std::string& reason);

// Outputs one fused node may have: an OpCall returns them in a TensorList. A producer whose
// value would be one more export than this does not join the group.
constexpr int kMaxFusedOutputs = TensorList::kCapacity;
// Tensors one fused node may read. A generated CUDA kernel takes, per input, a pointer and a
// stride per dim in its parameter block, which a launch limits to 32 KiB (CUDA 12.1 and later,
// sm_70 and newer: every driver and GPU a CUDA 13 build runs on): 128 inputs of 8 dims are about
// 9 KiB. A producer that would bring the group past this does not join.
constexpr size_t kMaxFusedInputs = 128;

struct FusionOptions {
  bool log = false;  // print each group and every rejected neighbour with the reason (EMBER_LOGS=fusion)
  // The sizes of the input dims compile() treats as dynamic, in this capture. A group dim of one
  // of these sizes becomes a run-time parameter of the generated code; other sizes stay constants
  // unless reference_groups shows them changing. A fixed dim that happens to have the same size
  // is read at run time too: slower by a little, never wrong, since the code reads actual sizes.
  std::vector<int64_t> dynamic_sizes;
  // The groups (summary, shape) of a capture of the same code at other sizes, in order. When this
  // capture's groups have the same summaries and ranks, a dim whose size differs from the
  // reference's is dynamic too: this finds sizes derived from a dynamic one (a flattened [s * k]).
  std::vector<std::pair<std::string, Dims>> reference_groups;
};

// The groups of `graph`'s fused nodes as FusionOptions::reference_groups.
std::vector<std::pair<std::string, Dims>> reference_groups(const Graph& graph);

// Why `node` cannot be part of any group, or "" when it can. Groups form on the CPU and, in
// builds with the CUDA backend, on a CUDA device (one device per group).
std::string unfusible_reason(const Graph& graph, const Node& node);

// Replaces each group of two or more nodes (or one pointwise node under a reduction root) by a
// fused node and compiles all groups of the graph into one shared library. Returns the number of
// fused nodes created. The graph stays verifiable; nodes keep their execution order, except that
// nodes reading a group's export before its root move right after the fused node.
int fuse_pointwise(Graph& graph, const FusionOptions& options = {});

}  // namespace ember::graph
