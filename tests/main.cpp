// doctest's main for every test executable, plus the skip accounting of tests/skip_case.h.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "runtime/device.h"
#include "runtime/tensor.h"
#include "skip_case.h"

namespace {

int cases_run = 0;
int cases_skipped = 0;
bool current_case_skipped = false;

// Counts the test cases a run enters; a case re-entered for its subcases counts once.
struct SkipCounter : doctest::IReporter {
  explicit SkipCounter(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData&) override {
    ++cases_run;
    current_case_skipped = false;
  }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

REGISTER_LISTENER("ember_skip_counter", 1, SkipCounter);

}  // namespace

namespace ember::testing {

void mark_case_skipped() {
  if (current_case_skipped) return;
  current_case_skipped = true;
  ++cases_skipped;
}

}  // namespace ember::testing

int main(int argc, char** argv) {
  // Factories without a device make tensors on the default device, which is CUDA on a GPU
  // machine: the suites' CPU cases (bit-for-bit and thread-count checks among them) must run on
  // the CPU there too, and the GPU cases name their device. An EMBER_DEVICE set by the caller wins.
  setenv("EMBER_DEVICE", "cpu", /*overwrite=*/0);
  // The default device is resolved once, at the first factory call without a device: a tensor a
  // test file makes at namespace scope (before this main) fixes it to CUDA on a GPU machine, and
  // every CPU case there would then run on the GPU.
  try {
    const ember::Device resolved = ember::TensorOptions{}.resolved_device();
    if (resolved != ember::default_device()) {
      std::printf("ember: the default device was fixed to %s before main() (a tensor made at namespace scope in "
                  "a test file?), not EMBER_DEVICE=%s\n",
                  resolved.str().c_str(), std::getenv("EMBER_DEVICE"));
      return 4;
    }
  } catch (const std::exception&) {
    // EMBER_DEVICE names a device this machine lacks: the cases that use it say so themselves.
  }
  doctest::Context context(argc, argv);
  const int failed = context.run();
  if (context.shouldExit() || failed != 0) return failed;
  // Every run names its cases (ctest one each, tools/gpu_check.sh by pattern): a filter that matched
  // nothing (a renamed case, a name with a ';' that CMake split into two tests) checked nothing and
  // must not read as a pass.
  if (cases_run == 0) {
    std::printf("ember: no test case matched the filter: nothing was checked\n");
    return 3;
  }
  // ctest's SKIP_REGULAR_EXPRESSION (tests/CMakeLists.txt) matches this line, so such a run is
  // listed as skipped; the exit status stays doctest's for direct runs (tools/gpu_check.sh).
  if (cases_run > 0 && cases_skipped == cases_run) {
    std::printf("%s\n", ember::testing::kAllSkippedLine);
  } else if (cases_skipped > 0) {
    // doctest has no skipped-at-run-time result: its summary above counts these as passed.
    std::printf("ember: %d of the %d test cases above were skipped, not passed (their MESSAGE says why)\n",
                cases_skipped, cases_run);
  }
  return 0;
}
