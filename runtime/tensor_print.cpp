// PyTorch-like printing: tensor([[1.0000, 2.0000], ...], dtype=float64, requires_grad=True).
#include <cmath>
#include <sstream>

#include "runtime/autograd/node.h"
#include "runtime/dispatch.h"
#include "runtime/tensor.h"

namespace ember {

namespace {

constexpr int64_t kEdgeItems = 3;   // elements shown at each end of a long dim
constexpr int64_t kSummarizeAbove = 1000;

void print_values(std::ostringstream& out, const Tensor& host, int dim, int64_t offset, bool summarize,
                  int indent) {
  const TensorImpl& impl = *host.impl();
  if (dim == host.dim()) {
    dispatch_dtype(host.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const auto value = static_cast<compute_t<T>>(static_cast<const T*>(impl.storage->data())[offset]);
      if constexpr (std::is_same_v<T, bool>) {
        out << (value ? "True" : "False");
      } else if constexpr (std::is_integral_v<T>) {
        out << value;
      } else if (std::isnan(static_cast<double>(value))) {
        out << "nan";  // as PyTorch, whatever the sign bit ("-nan" from printf)
      } else {
        out << fmt::format("{:.4f}", static_cast<double>(value));
      }
    });
    return;
  }
  const int64_t size = host.size(dim);
  out << '[';
  for (int64_t i = 0; i < size; ++i) {
    if (summarize && size > 2 * kEdgeItems && i == kEdgeItems) {
      out << "...";
      i = size - kEdgeItems - 1;
      out << (dim + 1 == host.dim() ? ", " : ",\n" + std::string(indent + 1, ' '));
      continue;
    }
    print_values(out, host, dim + 1, offset + i * host.stride(dim), summarize, indent + 1);
    if (i + 1 < size) out << (dim + 1 == host.dim() ? ", " : ",\n" + std::string(indent + 1, ' '));
  }
  out << ']';
}

}  // namespace

std::string Tensor::str(Where where) const {
  if (!defined()) return "tensor(undefined)";
  CallSiteScope site(where);  // a compiled function that prints breaks its graph here
  NoGradGuard no_grad;
  const Tensor host = host_values("str", *this, /*dense=*/false);
  std::ostringstream out;
  out << "tensor(";
  print_values(out, host, 0, host.storage_offset(), numel() > kSummarizeAbove, 7);
  if (dtype() != kFloat32 && dtype() != kInt64 && dtype() != kBool) out << ", dtype=" << dtype_name(dtype());
  if (!device().is_cpu()) out << ", device='" << device().str() << "'";
  if (grad_fn()) {
    out << ", grad_fn=<" << grad_fn()->name() << ">";  // mul_backward: PyTorch's MulBackward0
  } else if (requires_grad()) {
    out << ", requires_grad=True";
  }
  out << ')';
  return out.str();
}

}  // namespace ember
