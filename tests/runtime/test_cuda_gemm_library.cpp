// The cuBLASLt wrapper's host side, which needs no GPU: the TF32 switch, loading cuBLASLt on first
// use, and how a strided operand is described to it. The GEMMs themselves: test_cuda_gemm.cpp.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "runtime/cuda_settings.h"
#include "runtime/ember.h"
#ifdef EMBER_HAS_CUDA
#include <fstream>
#include <sstream>

#include "runtime/cuda/cublaslt_gemm.h"
#include "runtime/cuda/cublaslt_library.h"
#endif

#include "tf32_scope.h"

namespace test_cuda_gemm_library {

using namespace ember;

TEST_CASE("tf32 switch: off unless asked, and set_allow_tf32 round-trips") {
  if (std::getenv("EMBER_ALLOW_TF32") == nullptr) CHECK_FALSE(get_allow_tf32());
  {
    const Tf32Scope scope(true);
    CHECK(get_allow_tf32());
    set_allow_tf32(false);
    CHECK_FALSE(get_allow_tf32());
  }
}

#ifdef EMBER_HAS_CUDA

// libember does not link cuBLASLt (tests/install/check_cuda_runtime.sh); this loads it as the first
// GEMM would, and needs no GPU: loading and the status strings do not touch the driver. Named
// "cuda ..." so gpu_check.sh --prebuilt (which runs test_runtime -tc='cuda*') checks the loading
// with the GPU machine's library path too.
TEST_CASE("cuda library loading: cuBLASLt loads on first use, every entry point resolves and calls through") {
  const cuda::CublasLt& lt = cuda::cublaslt();
  CHECK(&cuda::cublaslt() == &lt);  // loaded once
  std::ifstream maps("/proc/self/maps");
  std::stringstream mapped;
  mapped << maps.rdbuf();
  CHECK(mapped.str().find("libcublasLt.so") != std::string::npos);
  for (const void* function :
       {reinterpret_cast<const void*>(lt.Create), reinterpret_cast<const void*>(lt.GetStatusString),
        reinterpret_cast<const void*>(lt.Matmul), reinterpret_cast<const void*>(lt.MatmulAlgoGetHeuristic),
        reinterpret_cast<const void*>(lt.MatmulDescCreate), reinterpret_cast<const void*>(lt.MatmulDescDestroy),
        reinterpret_cast<const void*>(lt.MatmulDescSetAttribute),
        reinterpret_cast<const void*>(lt.MatmulPreferenceCreate),
        reinterpret_cast<const void*>(lt.MatmulPreferenceDestroy),
        reinterpret_cast<const void*>(lt.MatmulPreferenceSetAttribute),
        reinterpret_cast<const void*>(lt.MatrixLayoutCreate), reinterpret_cast<const void*>(lt.MatrixLayoutDestroy),
        reinterpret_cast<const void*>(lt.MatrixLayoutSetAttribute)})
    CHECK(function != nullptr);
  const std::string not_supported = lt.GetStatusString(CUBLAS_STATUS_NOT_SUPPORTED);
  CHECK(not_supported.find("not supported") != std::string::npos);  // CUDA 13's wording
  CHECK(not_supported != lt.GetStatusString(CUBLAS_STATUS_SUCCESS));
  // A layout descriptor is host state: create, set and destroy it through the loaded library.
  cublasLtMatrixLayout_t layout = nullptr;
  REQUIRE(lt.MatrixLayoutCreate(&layout, CUDA_R_32F, 3, 4, 3) == CUBLAS_STATUS_SUCCESS);
  const int32_t batch = 2;
  CHECK(lt.MatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch) ==
        CUBLAS_STATUS_SUCCESS);
  CHECK(lt.MatrixLayoutDestroy(layout) == CUBLAS_STATUS_SUCCESS);
}

TEST_CASE("cublaslt describe_matrix: unit-stride layouts in place, others rejected") {
  cuda::GemmMatrix matrix;
  REQUIRE(cuda::describe_matrix(3, 4, 4, 1, matrix));  // row-major [3, 4]
  CHECK_FALSE(matrix.transposed);
  CHECK(matrix.leading == 4);
  REQUIRE(cuda::describe_matrix(3, 4, 6, 1, matrix));  // rows padded to 6
  CHECK(matrix.leading == 6);
  REQUIRE(cuda::describe_matrix(3, 4, 1, 3, matrix));  // transposed view of a [4, 3]
  CHECK(matrix.transposed);
  CHECK(matrix.leading == 3);
  REQUIRE(cuda::describe_matrix(1, 5, 99, 2, matrix));  // one row with stride 2: its columns 2 apart
  CHECK(matrix.transposed);
  CHECK(matrix.leading == 2);
  REQUIRE(cuda::describe_matrix(5, 1, 1, 0, matrix));  // a column vector: rows 1 apart, one column
  CHECK_FALSE(matrix.transposed);
  CHECK(matrix.leading == 1);
  REQUIRE(cuda::describe_matrix(3, 0, 0, 1, matrix));  // no elements: any valid layout
  CHECK(matrix.leading >= 1);
  CHECK_FALSE(cuda::describe_matrix(3, 4, 8, 2, matrix));  // no unit stride
  CHECK_FALSE(cuda::describe_matrix(3, 4, 0, 1, matrix));  // broadcast rows overlap
  CHECK_FALSE(cuda::describe_matrix(3, 4, 2, 1, matrix));  // rows overlap
}


#endif  // EMBER_HAS_CUDA

}  // namespace test_cuda_gemm_library
