// dropout(input; p, seed, offset) -> y, mask. The mask is a bool tensor (true = kept), like
// PyTorch's native_dropout: one byte per element saved for backward. Kernel: kernels/cpu/dropout_kernels.
#include "kernels/cpu/dropout_kernels.h"
#include "kernels/dropout.h"
#include "runtime/functional.h"

namespace ember {

namespace {

void dropout_shape(const OpCall& call, OutputMetas& outputs) {
  const Tensor& input = call.input(0);
  const double p = call.attrs.get<double>("p");
  check(p >= 0.0 && p <= 1.0, "dropout: probability must be in [0, 1], got {}", p);
  check(is_floating(input.dtype()), "dropout: expected a floating-point input, got {} (shape {})",
        input.dtype(), input.sizes());
  outputs[0].sizes = input.sizes();
  outputs[0].dtype = input.dtype();
  outputs[1].sizes = input.sizes();
  outputs[1].dtype = kBool;
}

// d y / d x = mask / (1 - p); with p == 1 nothing was kept and the gradient is zero.
void dropout_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  const double scale = dropout_scale(ctx.attrs.get<double>("p"));
  grads[0] = mul(mul(ctx.grad(0), ctx.output(1)), scale);
}

void register_dropout_ops(OpRegistry& registry) {
  OpDef def = make_op("dropout", "dropout(Tensor input, float p, int seed, int offset) -> (Tensor y, Tensor mask)",
                      OpKind::Other, dropout_shape, cpu::dropout_kernel, dropout_backward);
  def.num_outputs = 2;
  def.save_outputs = 0b10;
  registry.add(std::move(def));
}

const OpRegistration registration(register_dropout_ops);

}  // namespace
}  // namespace ember
