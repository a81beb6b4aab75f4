// CPU kernels of the solve family's registry ops (runtime/ops/linalg_solve_ops.cpp and
// linalg_cholesky_ops.cpp), in the inputs' dtype (float32 or float64), one matrix at a time.
// The LU kernels (linalg_lu_kernels.cpp) factor with LAPACK getf2's partial pivoting, so the
// pivots are torch's 1-based row swaps; the triangular solves are Eigen's triangularView.
#pragma once

#include "runtime/ops/registry.h"

namespace ember::cpu {

// A [*, n, n] -> (LU, int32 pivots [*, n]).
void lu_factor_kernel(const OpCall& call, TensorList& outputs);
// (LU, pivots, B [*, n, k]; adjoint) -> X with A X = B, or A^T X = B when adjoint.
void lu_solve_kernel(const OpCall& call, TensorList& outputs);
// (A, B; inverse) -> X with A X = B; throws for a singular A (linalg.inv's words when inverse).
void solve_kernel(const OpCall& call, TensorList& outputs);
// A -> (sign, logabsdet) from the LU factors: the product of U's diagonal and the swaps' parity.
void slogdet_kernel(const OpCall& call, TensorList& outputs);
// A -> lower L with L L^T = A, reading A's lower triangle (unblocked Cholesky-Crout).
void cholesky_kernel(const OpCall& call, TensorList& outputs);
// (A, B; upper, unitriangular) -> X with A X = B, reading one triangle of A.
void solve_triangular_kernel(const OpCall& call, TensorList& outputs);

}  // namespace ember::cpu
