// A new TensorImpl over another's memory and geometry, with no autograd state: what a detach(),
// a node's history-free alias of its own output, a compiled graph's escaping value and fill_'s
// repeat-free view of an expanded target all start from. And the other direction: an existing
// TensorImpl pointed at another's memory and geometry.
#pragma once

#include <memory>

#include "runtime/tensor_impl.h"

namespace ember {

inline std::shared_ptr<TensorImpl> alias_impl(const TensorImpl& source, bool is_view) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = source.storage;
  impl->sizes = source.sizes;
  impl->strides = source.strides;
  impl->offset = source.offset;
  impl->dtype = source.dtype;
  impl->device = source.device;
  impl->is_view = is_view;
  return impl;
}

// Points `target` at `source`'s memory, geometry, dtype and device, so every handle to `target`
// sees it (libtorch's set_data); its autograd state (requires_grad, .grad, hooks) stays. What
// Module::to does to move or convert a parameter in place, and AveragedModel to give its copy the
// model's values.
inline void replace_data(TensorImpl& target, const TensorImpl& source) {
  target.storage = source.storage;
  target.sizes = source.sizes;
  target.strides = source.strides;
  target.offset = source.offset;
  target.dtype = source.dtype;
  target.device = source.device;
  target.is_view = false;
}

}  // namespace ember
