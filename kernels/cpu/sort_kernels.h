// CPU kernels of sort and topk (sort_kernels.cpp). Attributes as in runtime/ops/sort_ops.cpp:
// sort takes dim and descending, topk k, dim, largest and sorted. Both write values (the input's
// dtype) and int64 indices along dim.
#pragma once

#include "runtime/ops/registry.h"

namespace ember::cpu {

// Every row along dim in fn::value_before's order (NaN largest), ties in their input order: a
// stable sort, whatever `stable` the caller asked for.
void sort_kernel(const OpCall& call, TensorList& outputs);
// The first k elements of each row in sort's order (descending when largest): a partial sort by
// (value, position), which picks the same elements and indices a stable full sort would. The
// results come sorted whether or not `sorted` is set.
void topk_kernel(const OpCall& call, TensorList& outputs);

}  // namespace ember::cpu
