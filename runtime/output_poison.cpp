// Output poisoning for tests (see output_poison.h).
#include "runtime/output_poison.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "runtime/ops/registry.h"

namespace ember {

bool poison_outputs_in_environment() {
  const char* value = std::getenv("EMBER_POISON_OUTPUTS");
  return value != nullptr && std::strcmp(value, "0") != 0;
}

namespace {

// Other devices are filled by their fill_ kernel: NaN for floating dtypes, 0xA5A5A5A5 for integers.
void poison_on_device(const Tensor& tensor) {
  static const OpDef& fill = registry().get("fill_");
  const Kernel kernel = fill.kernel_for(tensor.device());
  if (kernel == nullptr || tensor.dtype() == kBool) return;
  const double value = is_floating(tensor.dtype()) ? std::nan("") : -1515870811.0;
  const Attrs attrs{{"value", value}};
  const Tensor inputs[] = {tensor};
  TensorList outputs{tensor};
  kernel(OpCall{fill, inputs, attrs}, outputs);
}

}  // namespace

void poison(const Tensor& tensor) {
  if (tensor.numel() == 0) return;
  if (!tensor.device().is_cpu()) return poison_on_device(tensor);
  if (tensor.dtype() == kFloat32) {
    float* data = tensor.data_ptr<float>();
    for (int64_t i = 0; i < tensor.numel(); ++i) data[i] = std::nanf("");
  } else if (tensor.dtype() == kFloat64) {
    double* data = tensor.data_ptr<double>();
    for (int64_t i = 0; i < tensor.numel(); ++i) data[i] = std::nan("");
  } else if (tensor.dtype() != kBool) {
    std::memset(tensor.raw_data_ptr(), 0xA5, tensor.nbytes());
  }
}

}  // namespace ember
