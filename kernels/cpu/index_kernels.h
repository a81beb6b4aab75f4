// CPU gathers and scatters: embedding, index_select, gather, one_hot and the scatter-adds their
// gradients use (embedding_backward, index_add, scatter_add). Shape rules in runtime/ops/index_ops.cpp
// have validated shapes and dtypes; these kernels check index values (which only the data shows).
// Scatter-adds are deterministic: each output element receives its additions in index order, and
// work is split so that no two threads write one element.
#pragma once

#include "runtime/ops/registry.h"

namespace ember::cpu {

void embedding_kernel(const OpCall& call, TensorList& outputs);           // weight, indices
void embedding_backward_kernel(const OpCall& call, TensorList& outputs);  // grad, indices; num_weights
void index_select_kernel(const OpCall& call, TensorList& outputs);        // a, index; dim
void index_add_kernel(const OpCall& call, TensorList& outputs);           // self, index, source; dim
void gather_kernel(const OpCall& call, TensorList& outputs);              // a, index; dim
void scatter_add_kernel(const OpCall& call, TensorList& outputs);         // self, index, src; dim
void one_hot_kernel(const OpCall& call, TensorList& outputs);             // index; num_classes

}  // namespace ember::cpu
