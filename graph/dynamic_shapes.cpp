// mark_dynamic's registry and the size bookkeeping compile() does for dynamic dims.
#include "graph/dynamic_shapes.h"

#include <algorithm>
#include <memory>
#include <mutex>

#include <fmt/format.h>

namespace ember {

namespace {

// Marks live beside the tensors, not in them: only a capture reads them. Weak, so a mark never
// keeps a tensor alive; expired marks are dropped on the next mark.
struct Mark {
  std::weak_ptr<TensorImpl> tensor;
  uint32_t dims = 0;
};

std::mutex marks_mutex;
std::vector<Mark> marks;

}  // namespace

void mark_dynamic(const Tensor& tensor, int64_t dim, Where where) {
  CallSiteScope scope(where);
  check(tensor.defined(), "mark_dynamic: the tensor is undefined");
  const int64_t rank = tensor.dim();
  check(dim >= -rank && dim < rank, "mark_dynamic: dim {} is out of range for a tensor of shape {} (rank {})", dim,
        tensor.sizes(), rank);
  const int64_t wrapped = dim < 0 ? dim + rank : dim;
  std::lock_guard lock(marks_mutex);
  std::erase_if(marks, [](const Mark& mark) { return mark.tensor.expired(); });
  for (Mark& mark : marks)
    if (mark.tensor.lock() == tensor.impl_ptr()) {
      mark.dims |= 1u << wrapped;
      return;
    }
  marks.push_back({tensor.impl_ptr(), 1u << wrapped});
}

namespace graph {

uint32_t marked_dynamic_dims(const Tensor& tensor) {
  std::lock_guard lock(marks_mutex);
  for (const Mark& mark : marks)
    if (mark.tensor.lock() == tensor.impl_ptr()) return mark.dims;
  return 0;
}

uint32_t all_dims(int rank) { return rank >= 32 ? ~0u : (1u << rank) - 1u; }

std::vector<uint32_t> changed_dims(std::span<const TensorMeta> captured, const std::vector<Tensor>& inputs) {
  std::vector<uint32_t> changed(inputs.size(), 0);
  for (size_t i = 0; i < inputs.size() && i < captured.size(); ++i) {
    if (!inputs[i].defined() || inputs[i].dim() != captured[i].sizes.size()) continue;
    for (int d = 0; d < captured[i].sizes.size(); ++d)
      if (inputs[i].sizes()[d] != captured[i].sizes[d]) changed[i] |= 1u << d;
  }
  return changed;
}

std::vector<int64_t> dynamic_sizes(const std::vector<Tensor>& inputs, std::span<const uint32_t> dims) {
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < inputs.size() && i < dims.size(); ++i)
    for (int d = 0; d < inputs[i].dim(); ++d)
      if (((dims[i] >> d) & 1u) != 0 && std::ranges::find(sizes, inputs[i].sizes()[d]) == sizes.end())
        sizes.push_back(inputs[i].sizes()[d]);
  return sizes;
}

std::string describe_dims(std::span<const uint32_t> dims, std::span<const TensorMeta> captured,
                          const std::vector<Tensor>& inputs) {
  std::string text;
  for (size_t i = 0; i < dims.size() && i < inputs.size() && i < captured.size(); ++i)
    for (int d = 0; d < inputs[i].dim(); ++d)
      if (((dims[i] >> d) & 1u) != 0)
        text += fmt::format("{}input {} dim {} ({} -> {})", text.empty() ? "" : ", ", i, d, captured[i].sizes[d],
                            inputs[i].sizes()[d]);
  return text;
}

}  // namespace graph
}  // namespace ember
