// EMBER_LOGS topics and EMBER_LOGS_JSON lines (see compile_log.h). Logging happens at capture
// time and on guard misses, never on a replay's path, so the environment is read per event.
#include "graph/compile_log.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ember::graph::log {

bool enabled(std::string_view topic) {
  const char* logs = std::getenv("EMBER_LOGS");
  if (logs == nullptr) return false;
  std::string_view list(logs);
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view name = list.substr(0, comma);
    if (name == topic || name == "all") return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

void event(std::string_view topic, const std::string& text, const nlohmann::json& fields) {
  if (!enabled(topic)) return;
  fmt::print(stderr, "[ember {}] {}\n", topic, text);
  const char* path = std::getenv("EMBER_LOGS_JSON");
  if (path == nullptr || *path == '\0') return;
  nlohmann::json line = {{"topic", topic}, {"message", text}};
  if (fields.is_object()) line.update(fields);
  // One write per line under a lock: threads compiling at once never interleave their lines.
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  if (FILE* file = std::fopen(path, "a")) {
    const std::string dumped = line.dump() + "\n";
    std::fwrite(dumped.data(), 1, dumped.size(), file);
    std::fclose(file);
  } else {
    fmt::print(stderr, "[ember {}] cannot append to EMBER_LOGS_JSON={}\n", topic, path);
  }
}

void event(std::string_view topic, const std::string& text) { event(topic, text, nlohmann::json::object()); }

}  // namespace ember::graph::log
