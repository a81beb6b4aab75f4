// CPU concatenation: a memcpy per row for contiguous inputs of the output's dtype, the converting
// pointwise copy for the rest.
#include "kernels/cpu/join_kernels.h"

#include <cstring>

#include "kernels/cpu/copy_kernels.h"
#include "kernels/cpu/parallel_for.h"
#include "runtime/parallel.h"

namespace ember::cpu {

namespace {

// The output's elements [start, start + length) along dim, as a strided view (no autograd).
Tensor window(const Tensor& out, int dim, int64_t start, int64_t length) {
  auto impl = std::make_shared<TensorImpl>();
  const TensorImpl& base = *out.impl();
  impl->storage = base.storage;
  impl->sizes = base.sizes;
  impl->sizes[dim] = length;
  impl->strides = base.strides;
  impl->offset = base.offset + start * base.strides[dim];
  impl->dtype = base.dtype;
  impl->device = base.device;
  impl->is_view = true;
  return Tensor(std::move(impl));
}

// Copies a contiguous input of the output's dtype: per outer index, one block of bytes.
void copy_rows(const Tensor& out, const Tensor& input, int dim, int64_t start) {
  int64_t outer = 1;
  for (int d = 0; d < dim; ++d) outer *= out.sizes()[d];
  const size_t element = out.element_size();
  const int64_t inner = input.numel() / outer;  // elements per outer index in this input
  const int64_t out_row = out.numel() / outer;
  const size_t offset_bytes = static_cast<size_t>(start * out.strides()[dim]) * element;
  char* to = static_cast<char*>(out.raw_data_ptr()) + offset_bytes;
  const char* from = static_cast<const char*>(input.raw_data_ptr());
  parallel_for(outer, input.numel() >= kParallelGrain && outer > 1, [&](int64_t o) {
    std::memcpy(to + o * out_row * element, from + o * inner * element, static_cast<size_t>(inner) * element);
  });
}

}  // namespace

void cat_kernel(const OpCall& call, TensorList& outputs) {
  const Tensor& out = outputs[0];
  if (out.numel() == 0) return;
  const int dim = wrap_dim(call.attrs.get<int64_t>("dim"), out.dim(), "cat");
  int64_t start = 0;
  for (const Tensor& input : call.inputs) {
    if (cat_skips(input.sizes())) continue;
    const int64_t length = input.size(dim);
    if (input.numel() > 0) {
      if (input.dtype() == out.dtype() && input.is_contiguous()) {
        copy_rows(out, input, dim, start);
      } else {
        convert_into(window(out, dim, start, length), input);
      }
    }
    start += length;
  }
}

}  // namespace ember::cpu
