// open_shared_library / shared_library_symbol (runtime/shared_library.h), which load cuBLASLt and
// NVRTC on first use: the first loadable candidate wins, and failures name what was tried and why.
#include <doctest/doctest.h>

#include <string>

#include "error_of.h"
#include "runtime/error.h"
#include "runtime/shared_library.h"

namespace test_shared_library {

using namespace ember;
using ember::testing::error_of;

TEST_CASE("shared library: the first candidate that loads is used and its functions resolve") {
  void* libm = open_shared_library({"libember-no-such-library.so.1", "libm.so.6"}, "the C math library");
  REQUIRE(libm != nullptr);
  double (*cosine)(double) = nullptr;
  resolve_function(libm, "cos", "libm.so.6", cosine);
  REQUIRE(reinterpret_cast<const void*>(cosine) != nullptr);
  CHECK(cosine(0.0) == 1.0);
}

TEST_CASE("shared library: a library that loads nowhere and a missing function are clear errors") {
  const std::string missing =
      error_of([] { open_shared_library({"libember-no-such-library.so.1", "/nonexistent/libx.so"}, "the test's X"); });
  CHECK(missing.find("cannot load the test's X") != std::string::npos);
  CHECK(missing.find("libember-no-such-library.so.1: ") != std::string::npos);  // each candidate, with dlerror()
  CHECK(missing.find("/nonexistent/libx.so: ") != std::string::npos);

  void* libm = open_shared_library({"libm.so.6"}, "the C math library");
  const std::string no_symbol = error_of([&] { shared_library_symbol(libm, "ember_no_such_function", "libm.so.6"); });
  CHECK(no_symbol.find("libm.so.6 has no function ember_no_such_function") != std::string::npos);
}

}  // namespace test_shared_library
