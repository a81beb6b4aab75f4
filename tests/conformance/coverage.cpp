// The coverage checks that make the suite registry-driven: every registered op has conformance
// cases (every differentiable one a gradient check), and every op a case names is registered.
#include <doctest/doctest.h>

#include <map>
#include <set>

#include "harness.h"

namespace conformance::coverage {
namespace {

// Ops a table case cannot express, each checked by the named specific test instead.
const std::map<std::string, const char*> kCoveredElsewhere = {
    // No value to compare: shape, dtype and device only.
    {"empty", "cases_random.cpp: 'empty allocates the requested shape, dtype and device'"},
    // Philox streams: range, moments and determinism in (seed, offset).
    {"rand", "cases_random.cpp: 'rand is uniform between 0 and 1 ...'"},
    {"randn", "cases_random.cpp: 'randn has mean 0 and variance 1 ...'"},
    {"randint", "cases_random.cpp: 'randint draws every value from low to high - 1 ...'"},
    // A list of parameters in, nothing out: bit-identical to the per-parameter steps, whose cases
    // check the math (cases_optim.cpp).
    {"_multi_sgd_step_", "tests/runtime/test_multi_tensor_optim.cpp: '_multi_sgd_step_ on the CPU is bit-identical ...'"},
    {"_multi_adam_step_", "tests/runtime/test_multi_tensor_optim.cpp: '_multi_adam_step_ on the CPU is bit-identical ...'"},
    // Two outputs, each bit-identical to cross_entropy's and cross_entropy_backward's, whose
    // cases check the math.
    {"cross_entropy_with_backward",
     "tests/runtime/test_losses.cpp: 'cross_entropy_with_backward gives the bits of cross_entropy and ...'"},
    // Values in cases_linalg_solve.cpp; the gradient is torch's symmetric one, which central
    // differences of single elements of the triangle it reads cannot see: checked through a
    // symmetric input instead.
    {"linalg_cholesky", "tests/runtime/test_linalg_gradients.cpp: 'gradients: linalg.cholesky, lower and upper'"},
};

struct Coverage {
  int cases = 0;
  std::set<std::string> named;        // ops some case names
  std::set<std::string> gradchecked;  // ops some case compares with finite differences
};

Coverage collect() {
  Coverage coverage;
  for (const CaseFamily& family : case_families()) {
    for (const Case& c : family.make()) {
      ++coverage.cases;
      coverage.named.insert(c.op);
      const ember::OpDef* op = ember::registry().find(c.op);
      if (op != nullptr && gradient_checkable(*op, c)) coverage.gradchecked.insert(c.op);
    }
  }
  return coverage;
}

TEST_CASE("conformance coverage: every registered op has cases, every differentiable op a gradient check") {
  const Coverage coverage = collect();
  int covered = 0;
  const std::vector<const ember::OpDef*> ops = ember::registry().all();
  for (const ember::OpDef* op : ops) {
    const bool named = coverage.named.count(op->name) > 0;
    const bool elsewhere = kCoveredElsewhere.count(op->name) > 0;
    CHECK_MESSAGE((named || elsewhere), "op '" << op->name << "' is registered but no conformance case names it; "
                                              << "add cases in tests/conformance/cases_*.cpp");
    if (op->backward != nullptr && !elsewhere) {
      CHECK_MESSAGE(coverage.gradchecked.count(op->name) > 0,
                    "op '" << op->name << "' has a backward rule but no case checks its gradients");
    }
    covered += (named || elsewhere) ? 1 : 0;
  }
  MESSAGE("conformance coverage: " << covered << " of " << ops.size() << " registered ops, " << coverage.cases
                                    << " cases, " << coverage.gradchecked.size() << " ops with gradient checks");
  for (const auto& [name, where] : kCoveredElsewhere)
    CHECK_MESSAGE(ember::registry().find(name) != nullptr,
                  "op '" << name << "' is listed as covered by " << where << " but is not registered");
}

TEST_CASE("conformance coverage: every op the cases name is registered") {
  for (const std::string& name : collect().named)
    CHECK_MESSAGE(ember::registry().find(name) != nullptr,
                  "op '" << name << "' has conformance cases but no op of that name is registered");
}

}  // namespace
}  // namespace conformance::coverage
