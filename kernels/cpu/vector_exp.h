// exp over whole arrays, for the CPU kernels that take many exponentials at once (cross_entropy):
// glibc's vector math library (libmvec) at the build's vector width where the build links it,
// else std::exp element by element. libmvec's functions may be less accurate than the scalar
// ones (glibc's libmvec notes say so, without a bound): tests/runtime/test_vector_exp.cpp holds
// this build's to 4 ulps of the true value and measures ~2.7. Every value goes through the same
// vector function whatever its place in the array (a short tail is padded to a full vector), so
// results never depend on where a value sits or how the array was split.
#pragma once

#include <cstdint>

namespace ember::cpu {

void exp_in_place(float* values, int64_t count);
void exp_in_place(double* values, int64_t count);

// Whether exp_in_place goes through libmvec in this build (for tests and benchmarks to report).
bool vector_exp_from_libmvec();

}  // namespace ember::cpu
