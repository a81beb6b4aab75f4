// A new TensorImpl over another's memory and geometry, with no autograd state: what a detach(),
// a node's history-free alias of its own output, a compiled graph's escaping value and fill_'s
// repeat-free view of an expanded target all start from.
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

}  // namespace ember
