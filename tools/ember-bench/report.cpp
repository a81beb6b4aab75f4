// Statistics and output formatting for ember-bench.
#include <algorithm>
#include <cstdio>

#include "tools/ember-bench/bench.h"

namespace ember::bench {

double StepTimes::percentile(double fraction) const {
  if (step_us.empty()) return 0.0;
  std::vector<double> sorted = step_us;
  std::sort(sorted.begin(), sorted.end());
  const double position = fraction * static_cast<double>(sorted.size() - 1);
  const size_t below = static_cast<size_t>(position);
  const size_t above = std::min(below + 1, sorted.size() - 1);
  const double weight = position - static_cast<double>(below);
  return sorted[below] * (1.0 - weight) + sorted[above] * weight;
}

double StepTimes::median() const { return percentile(0.5); }

void report(const nlohmann::json& result, bool json) {
  if (json) {
    std::printf("%s\n", result.dump().c_str());
    std::fflush(stdout);
    return;
  }
  std::printf("%s\n", std::string(48, '-').c_str());
  for (const auto& [key, value] : result.items()) {
    std::string text = value.is_string() ? value.get<std::string>() : value.dump();
    std::printf("%20s  %s\n", key.c_str(), text.c_str());
  }
  std::fflush(stdout);
}

void progress(const RunOptions& options, int64_t step, int64_t total) {
  if (options.json || total < 50) return;
  if (step % std::max<int64_t>(1, total / 20) != 0 && step + 1 != total) return;
  std::fprintf(stderr, "\r  %s/%s: step %lld/%lld", options.model.c_str(), options.mode.c_str(),
               static_cast<long long>(step + 1), static_cast<long long>(total));
  if (step + 1 == total) std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

}  // namespace ember::bench
