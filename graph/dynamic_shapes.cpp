// mark_dynamic's registry, the size bookkeeping compile() does for dynamic dims, and the
// CompiledFunction members that decide between a recompile and a capture for new sizes.
#include "graph/dynamic_shapes.h"

#include <algorithm>
#include <memory>
#include <mutex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "graph/compile.h"
#include "graph/compile_internal.h"
#include "graph/compile_log.h"
#include "graph/compiled_autograd.h"

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

void CompiledFunction::make_room_for_size_specialization(int64_t bytes) {
  // Oldest first: a size that comes back is captured again.
  auto specialized = [](const Entry& entry) { return entry.size_specialization; };
  auto held = [&] {
    int64_t total = bytes;
    for (const Entry& entry : entries_)
      if (entry.size_specialization)
        total += arena_bytes(entry.executor) + (entry.backward ? arena_bytes(entry.backward->executor) : 0);
    return total;
  };
  while (std::ranges::count_if(entries_, specialized) > 0 &&
         (std::ranges::count_if(entries_, specialized) >= kMaxSizeSpecializations ||
          held() > options_.size_specialization_bytes))
    entries_.erase(std::ranges::find_if(entries_, specialized));
}

int CompiledFunction::variants() const {
  return static_cast<int>(std::ranges::count_if(entries_, [](const Entry& entry) { return !entry.size_specialization; }));
}

CompiledFunction::SizeChange CompiledFunction::size_change(const std::vector<Tensor>& inputs) const {
  for (size_t e = 0; e < entries_.size(); ++e) {
    const Entry& entry = entries_[e];
    const Graph& graph = entry.executor.graph();
    std::vector<uint32_t> changed = changed_dims(entry.guards.inputs, inputs);
    if (std::ranges::all_of(changed, [](uint32_t dims) { return dims == 0; })) continue;
    const std::vector<Tensor> all = graph.grad_inputs.empty() ? inputs : with_grad_inputs(graph, inputs);
    if (guards_hold(entry.guards, graph, all, changed)) return {static_cast<int>(e), std::move(changed)};
  }
  return {};
}

void CompiledFunction::add_dynamic_dims(const std::vector<Tensor>& inputs) {
  if (options_.dynamic == false) return;
  dynamic_dims_.resize(std::max(dynamic_dims_.size(), inputs.size()), 0u);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) continue;
    if (options_.dynamic == true) dynamic_dims_[i] |= all_dims(inputs[i].dim());
    dynamic_dims_[i] |= marked_dynamic_dims(inputs[i]);
  }
}

CompiledFunction::SizeMiss CompiledFunction::size_miss(const std::vector<Tensor>& inputs, std::string& reason) {
  SizeMiss miss;
  if (options_.dynamic == false || entries_.empty()) return miss;
  const SizeChange change = size_change(inputs);
  if (change.entry < 0) return miss;
  miss.reference = change.entry;
  std::vector<uint32_t> fresh = change.dims;  // the changed dims that are not dynamic yet
  for (size_t i = 0; i < fresh.size() && i < dynamic_dims_.size(); ++i) fresh[i] &= ~dynamic_dims_[i];
  const std::span<const TensorMeta> captured = entries_[change.entry].guards.inputs;
  if (std::ranges::all_of(fresh, [](uint32_t dims) { return dims == 0; })) {
    miss.new_sizes = true;
    const std::string dims = describe_dims(change.dims, captured, inputs);
    log::event("recompiles", fmt::format("new sizes of dynamic dims: {}: capturing again, kernels shared", dims),
               {{"new_sizes", dims}});
  } else if (!options_.dynamic.has_value()) {
    reason = fmt::format("{} changed size: dynamic from now on", describe_dims(fresh, captured, inputs));
    dynamic_dims_.resize(std::max(dynamic_dims_.size(), fresh.size()), 0u);
    for (size_t i = 0; i < fresh.size(); ++i) dynamic_dims_[i] |= fresh[i];
  }
  return miss;
}

}  // namespace graph
}  // namespace ember
