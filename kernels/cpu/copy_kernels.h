// CPU kernels that create or copy data: factories (arange and linspace: range_kernels.h), clone,
// dtype conversion, copy_, fill_, zero_.
#pragma once

#include "runtime/ops/registry.h"

namespace ember::cpu {

void empty_kernel(const OpCall& call, TensorList& outputs);
void full_kernel(const OpCall& call, TensorList& outputs);
void rand_kernel(const OpCall& call, TensorList& outputs);
void randn_kernel(const OpCall& call, TensorList& outputs);
void randint_kernel(const OpCall& call, TensorList& outputs);

void clone_kernel(const OpCall& call, TensorList& outputs);     // out = input, any dtype pair
void copy_inplace_kernel(const OpCall& call, TensorList& outputs);  // input 0 = input 1 (broadcast)
void fill_inplace_kernel(const OpCall& call, TensorList& outputs);
void zero_inplace_kernel(const OpCall& call, TensorList& outputs);

// Writes `value` (which must fit the dtype) to every element of `target`, each address once.
void fill(const Tensor& target, double value);

// Writes `source` converted to `destination`'s dtype into `destination` (broadcasting source).
void convert_into(const Tensor& destination, const Tensor& source);

}  // namespace ember::cpu
