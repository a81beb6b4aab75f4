# Test sources compiled in batches (CMake's unity build). Every test file includes
# runtime/ember.h, and GCC instantiates the templates that header's inline functions use in each
# file that includes it, precompiled header or not: ~2.5 s of an empty test file's ~2.7 s. With
# ~360 test files that fixed cost was most of what CI's two cores spent on tests; a batch of
# files pays it once.
#
# A batch is one translation unit: an anonymous namespace or a `using namespace` at file scope
# would reach the next files of the batch. So each test file puts its body, after its includes,
# in a namespace named after the file (`namespace test_norms { ... }`; conformance::cases_unary,
# ember::ckpt::test_reshard in those suites), and helper headers that share a namespace give
# different functions different names. The asan preset turns the batches off, so that, as with
# its precompiled headers, every file's own includes are checked.
set(EMBER_TEST_BATCH_SIZE 16 CACHE STRING "Test files per batch when EMBER_BATCH_TESTS is on")
option(EMBER_BATCH_TESTS "Compile each test suite's files in batches" ON)

# ember_batch_test_sources(<target>): <target>'s C++ files compiled EMBER_TEST_BATCH_SIZE at a time.
function(ember_batch_test_sources target)
  if(EMBER_BATCH_TESTS)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${EMBER_TEST_BATCH_SIZE})
  endif()
endfunction()
