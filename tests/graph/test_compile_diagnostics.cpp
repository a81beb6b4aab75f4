// The compile stage's diagnostics (graph/compile_log.h): EMBER_LOGS topics with their JSON lines
// in EMBER_LOGS_JSON (graph breaks with the call site, recompiles, guards, performance hints), and
// CompiledFunction::explain().
#include <doctest/doctest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "graph/capture.h"
#include "graph/compile.h"
#include "graph/compile_log.h"
#include "graph_test_util.h"
#include "scoped_cache_dir.h"

namespace test_compile_diagnostics {

using namespace ember;

namespace {

// Sets EMBER_LOGS and EMBER_LOGS_JSON (to a fresh file) for one test; restores both after.
class ScopedLogs {
 public:
  explicit ScopedLogs(const char* topics) {
    for (const char* name : {"EMBER_LOGS", "EMBER_LOGS_JSON"})
      if (const char* old = std::getenv(name)) saved_.emplace_back(name, old);
    path_ = std::filesystem::temp_directory_path() / fmt::format("ember-logs-{}.jsonl", ::getpid());
    std::filesystem::remove(path_);
    ::setenv("EMBER_LOGS", topics, 1);
    ::setenv("EMBER_LOGS_JSON", path_.c_str(), 1);
  }
  ~ScopedLogs() {
    ::unsetenv("EMBER_LOGS");
    ::unsetenv("EMBER_LOGS_JSON");
    for (const auto& [name, value] : saved_) ::setenv(name.c_str(), value.c_str(), 1);
    std::filesystem::remove(path_);
  }
  // The JSON lines written so far with `topic`.
  std::vector<nlohmann::json> lines(const std::string& topic) const {
    std::vector<nlohmann::json> found;
    std::ifstream file(path_);
    for (std::string line; std::getline(file, line);) {
      nlohmann::json event = nlohmann::json::parse(line);
      if (event.at("topic") == topic) found.push_back(std::move(event));
    }
    return found;
  }

 private:
  std::filesystem::path path_;
  std::vector<std::pair<std::string, std::string>> saved_;
};

}  // namespace

TEST_CASE("compile diagnostics: EMBER_LOGS names whole topics, or all") {
  {
    ScopedLogs logs("graph_breaks,guards");
    CHECK(graph::log::enabled("graph_breaks"));
    CHECK(graph::log::enabled("guards"));
    CHECK_FALSE(graph::log::enabled("graph"));  // a prefix of a listed name is not that name
    CHECK_FALSE(graph::log::enabled("recompiles"));
  }
  {
    ScopedLogs logs("all");
    CHECK(graph::log::enabled("perf_hints"));
    CHECK(graph::log::enabled("output_code"));
  }
  CHECK_FALSE(graph::log::enabled("recompiles"));  // restored: unset
}

TEST_CASE("compile diagnostics: a graph break is logged with its call site, hinted at and explained") {
  ScopedLogs logs("graph_breaks,recompiles,perf_hints");
  auto lenient = ember::compile([](const Tensor& x) {
    const double total = (x * x).sum().item();  // a host read of a graph value
    return x * total;
  }, {.compile_every_segment = true, .warmup_calls = 0});
  const Tensor x = from_vector<float>({1, 2}, {2});
  CHECK(lenient(x).to_vector<float>() == std::vector<float>{5.0f, 10.0f});
  const std::vector<nlohmann::json> breaks = logs.lines("graph_breaks");
  REQUIRE(breaks.size() == 1);
  const std::string reason = breaks[0].at("reason");
  CHECK(reason.find("item() reads the values of %2 (from sum)") == 0);
  CHECK(reason.find("test_compile_diagnostics.cpp:") != std::string::npos);
  CHECK(breaks[0].at("fullgraph") == false);
  REQUIRE(logs.lines("perf_hints").size() == 1);
  CHECK(logs.lines("perf_hints")[0].at("message").get<std::string>().find("graph break") != std::string::npos);
  CHECK(logs.lines("perf_hints")[0].at("graph_break") == reason);
  CHECK(logs.lines("recompiles").empty());  // no fall back to eager: segments from now on
  REQUIRE(lenient.state().graph_breaks() == std::vector<std::string>{reason});
  // The next call compiles its first segment, (x * x).sum() up to the item() that ended it.
  CHECK(lenient(x).to_vector<float>() == std::vector<float>{5.0f, 10.0f});
  REQUIRE(logs.lines("graph_breaks").size() == 3);
  const nlohmann::json compiled = logs.lines("graph_breaks")[1];
  CHECK(compiled.at("segment") == 0);
  CHECK(compiled.at("kernels") == 2);
  CHECK(compiled.at("ended_by").get<std::string>().find("item() at ") == 0);
  // x * total, one kernel after the read: that place in fn runs eagerly from now on.
  const nlohmann::json eager_place = logs.lines("graph_breaks")[2];
  CHECK(eager_place.at("eager_place") == 1);
  CHECK(eager_place.at("why") == "under two kernels, nothing to compile");
  const std::string summary = lenient.state().explain();
  CHECK(summary.find("graph breaks: 1\n  1. item() reads the values") != std::string::npos);
  CHECK(summary.find("runs eagerly: no") != std::string::npos);
  CHECK(summary.find("runs as compiled segments: 1 calls; 1 segments compiled (limit 64), 1 segment runs compiled, "
                     "1 kernel by kernel") != std::string::npos);
  CHECK(summary.find("  segment 0: 2 kernels, 1 runs, ended by item() at ") != std::string::npos);
  CHECK(summary.find("  runs eagerly after 1 host reads: 1 kernels, ended by the function's return; under two "
                     "kernels") != std::string::npos);

  // With fullgraph the break is logged too, then thrown.
  auto strict = ember::compile([](const Tensor& x) { return x * (x * x).sum().item(); },
                               {.fullgraph = true, .warmup_calls = 0});
  CHECK_THROWS_AS(strict(x), graph::GraphBreak);
  REQUIRE(logs.lines("graph_breaks").size() == 4);
  CHECK(logs.lines("graph_breaks")[3].at("fullgraph") == true);
}

TEST_CASE("compile diagnostics: guards of each entry, why each missed, and the recompile") {
  ScopedLogs logs("guards,recompiles");
  Tensor weight = from_vector<float>({0.5f, -1.25f, 2.0f}, {3});
  auto scaled = ember::compile([&](const Tensor& x) { return (x * weight).sum(Dims{1}); }, {.warmup_calls = 0});
  const Tensor x = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  (void)scaled(x);
  {
    NoGradGuard no_grad;
    (void)scaled(x);
  }
  const std::vector<nlohmann::json> guards = logs.lines("guards");
  REQUIRE(guards.size() == 3);  // entry 0's guards, its miss, entry 1's guards
  CHECK(guards[0].at("guards").get<std::string>().find("input 0: [2, 3] float32 on cpu; grad mode on; autocast off; "
                                                       "allow_tf32 off; 1 state tensors") == 0);
  CHECK(guards[1].at("failure") == "grad mode is off, the graph was captured with it on");
  CHECK(guards[2].at("guards").get<std::string>().find("grad mode off") != std::string::npos);
  REQUIRE(logs.lines("recompiles").size() == 1);
  CHECK(logs.lines("recompiles")[0].at("reason") == "grad mode is off, the graph was captured with it on");
}

TEST_CASE("compile diagnostics: hints for sizes that exhaust the cache, and explain() of a dynamic training step") {
  {
    ScopedLogs logs("perf_hints");
    auto fixed = ember::compile([](const Tensor& x) { return x * 2.0; }, {.cache_limit = 2, .warmup_calls = 0,
                                                                          .dynamic = false});
    for (int64_t n : {2, 3, 4}) (void)fixed(zeros({n}));
    REQUIRE(logs.lines("perf_hints").size() == 1);
    CHECK(logs.lines("perf_hints")[0].at("message").get<std::string>().find("leave `dynamic` unset") !=
          std::string::npos);
  }
  graph_test::ScopedCacheDir cache;
  graph_test::SeedMlp mlp(5);
  auto step = ember::compile([&](const Tensor& x, const Tensor& y) { return mlp.step(x, y); }, {.fullgraph = true});
  for (int64_t size : {32, 32, 16, 8, 8}) {
    auto [x, y] = graph_test::batch(0, size);
    (void)step(x, y);
  }
  const std::string summary = step.state().explain();
  INFO(summary);
  CHECK(summary.find("compiled function: 5 calls, 3 captures, 1 replays; 2 variants (cache_limit 8), 1 captures for "
                     "new sizes of dynamic dims, 3 entries held\n") == 0);
  CHECK(summary.find("dynamic dims: input 0 dims 0; input 1 dims 0\n") != std::string::npos);
  CHECK(summary.find("  1. input 0 dim 0 (32 -> 16), input 1 dim 0 (32 -> 16) changed size") != std::string::npos);
  CHECK(summary.find("graph breaks: 0\nruns eagerly: no\n") != std::string::npos);
  CHECK(summary.find("entry 0 (variant): ") != std::string::npos);
  CHECK(summary.find("entry 2 (new sizes): ") != std::string::npos);
  CHECK(summary.find("fused: relu_backward+sum") != std::string::npos);
  CHECK(summary.find("lowered executor, arena ") != std::string::npos);
  CHECK(summary.find("guards: input 0: [8, 100] float32 on cpu (dims 0 dynamic)") != std::string::npos);
}

TEST_CASE("compile diagnostics: a kernel's error in a replay names the user's call site, as eager's does") {
  // The target check runs in cross_entropy's kernel, graph_test::Mlp::step's line: eager names it,
  // and so must a replay of the graph captured from it, whichever executor replays it.
  for (const bool lowered : {true, false}) {
    for (const bool fuse : {true, false}) {
      INFO("lowered ", lowered, ", fuse ", fuse);
      graph_test::SeedMlp compiled_mlp(3), eager_mlp(3);
      auto step = ember::compile([&](const Tensor& x, const Tensor& y) { return compiled_mlp.step(x, y); },
                                 {.fullgraph = true, .fuse = fuse, .lowered = lowered});
      for (int call = 0; call < 2; ++call) {  // warm-up, capture
        const auto [x, y] = graph_test::batch(call);
        step(x, y);
      }
      const auto [x, y] = graph_test::batch(2);
      const Tensor bad = randint(12, 13, {32});
      std::string eager_message, compiled_message;
      try {
        eager_mlp.step(x, bad);
      } catch (const Error& error) {
        eager_message = error.what();
      }
      try {
        step(x, bad);
      } catch (const Error& error) {
        compiled_message = error.what();
      }
      REQUIRE(eager_message.find("target 12 at position 0 is out of range for 10 classes at graph_test_util.h:") !=
              std::string::npos);
      CHECK(compiled_message.starts_with(eager_message));
      CHECK(compiled_message.find("compiled") != std::string::npos);  // and says the replay raised it
      CHECK(step.state().replays() == 1);
    }
  }
}

}  // namespace test_compile_diagnostics
