// The reference models of ember-bench; waits for ember::nn and ember::optim.
#include "tools/ember-bench/bench.h"

namespace ember::bench {

nlohmann::json run_model(const RunOptions& options) {
  fail("ember-bench: model benchmarks need ember::nn (not merged yet); model {} unavailable", options.model);
}

}  // namespace ember::bench
