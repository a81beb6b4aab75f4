// The compile stage's diagnostics (DESIGN.md): EMBER_LOGS is a comma list of topics, each
// printed as human text on stderr, and EMBER_LOGS_JSON=<file> appends the same events as JSON
// lines for tools. Topics:
//   graph_breaks  each graph break: the op, why, the call site, and what happens next
//   recompiles    each recompile with its reason, dims turning dynamic, captures for new sizes,
//                 the fall back to eager
//   guards        the guards of each new entry; on a miss, why each entry's guards failed
//   perf_hints    what keeps a compiled function slower than it could be, and what to change
//   graph, passes, fusion, output_code, executor: the captured graph, each pass, the fused
//                 groups, the generated source, the executor chosen
// "all" turns every topic on.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace ember::graph::log {

// Whether EMBER_LOGS names `topic` (a whole comma-separated name, or "all").
bool enabled(std::string_view topic);

// An event of `topic`, when enabled: "[ember <topic>] <text>" on stderr and, with
// EMBER_LOGS_JSON set, {"topic": ..., "message": text, <fields>} as one line of that file.
void event(std::string_view topic, const std::string& text, const nlohmann::json& fields);
void event(std::string_view topic, const std::string& text);

}  // namespace ember::graph::log
