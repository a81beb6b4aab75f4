// Retention and the `latest` pointer.
#include "ckpt/retention.h"

#include <algorithm>

#include "ckpt/file_io.h"
#include "ckpt/manifest.h"
#include "runtime/error.h"

namespace ember::ckpt {

namespace fs = std::filesystem;

void check_checkpoint_name(std::string_view name) {
  check(!name.empty() && name.size() <= kMaxCheckpointNameBytes,
        "checkpoint: name '{}' has {} bytes; names have 1 to {} bytes (the save's temporary directory "
        "{}NAME must fit the file system's {}-byte limit)", name, name.size(), kMaxCheckpointNameBytes,
        kTemporaryPrefix, kMaxFileNameBytes);
  check(name.front() != '.', "checkpoint: name '{}' may not start with '.' (temporary files do)",
        name);
  check(name != kLatestFileName, "checkpoint: name 'latest' is reserved for the pointer file");
  for (char c : name)
    check(c > 0x20 && c < 0x7f && c != '/',
          "checkpoint: name '{}' must be a plain directory name (printable, no '/')", name);
}

std::optional<int64_t> parse_step_name(std::string_view name) {
  constexpr std::string_view prefix = "step_";
  if (!name.starts_with(prefix) || name.size() == prefix.size() || name.size() > prefix.size() + 18)
    return std::nullopt;
  int64_t step = 0;
  for (char c : name.substr(prefix.size())) {
    if (c < '0' || c > '9') return std::nullopt;
    step = step * 10 + (c - '0');
  }
  return step;
}

std::vector<CheckpointInfo> list_checkpoints(const fs::path& root) {
  std::vector<CheckpointInfo> found;
  std::error_code error;
  for (const fs::directory_entry& item : fs::directory_iterator(root, error)) {
    const std::string name = item.path().filename().string();
    const std::optional<int64_t> step = parse_step_name(name);
    if (step && item.is_directory() && fs::is_regular_file(item.path() / kManifestFileName))
      found.push_back({name, *step});
  }
  std::sort(found.begin(), found.end(), [](const CheckpointInfo& a, const CheckpointInfo& b) {
    return a.step != b.step ? a.step < b.step : a.name < b.name;
  });
  return found;
}

void write_latest(const fs::path& root, const std::string& name, bool durable) {
  // The content is not synced before the rename: each sync is a journal commit, which on a busy
  // file system costs tens of milliseconds, and a pointer whose content a power cut lost is
  // harmless because readers fall back to the newest committed checkpoint (latest_checkpoint).
  replace_file_atomically(root / kLatestFileName, name + "\n", false, durable);
}

namespace {
// std::filesystem's errors would escape callers that catch ember::Error.
void remove_tree(const fs::path& path) {
  std::error_code error;
  fs::remove_all(path, error);
  check(!error, "checkpoint retention: cannot remove {}: {}", path.string(), error.message());
}

std::optional<std::string> read_latest_name(const fs::path& root) {
  try {
    std::string text = read_small_file(root / kLatestFileName, 512);
    if (!text.empty() && text.back() == '\n') text.pop_back();
    check_checkpoint_name(text);
    return text;
  } catch (const Error&) {
    return std::nullopt;  // missing or damaged pointer: fall back to listing
  }
}
}  // namespace

std::optional<fs::path> latest_checkpoint(const fs::path& root) {
  if (std::optional<std::string> name = read_latest_name(root))
    if (fs::is_regular_file(root / *name / kManifestFileName)) return root / *name;
  std::vector<CheckpointInfo> committed = list_checkpoints(root);
  if (committed.empty()) return std::nullopt;
  return root / committed.back().name;
}

RetentionReport apply_retention(const fs::path& root, int keep_last, bool durable, Leftovers leftovers) {
  check(keep_last >= 1, "checkpoint retention: keep_last must be at least 1, got {}", keep_last);
  RetentionReport report;
  const std::vector<CheckpointInfo> committed = list_checkpoints(root);
  const std::optional<std::string> latest = read_latest_name(root);
  const size_t keep_from = committed.size() > static_cast<size_t>(keep_last)
                               ? committed.size() - static_cast<size_t>(keep_last) : 0;
  for (size_t i = 0; i < keep_from; ++i) {
    const std::string& name = committed[i].name;
    if (latest && *latest == name) continue;
    // Hide it first with one rename, so no reader ever sees a half-deleted checkpoint. A .deleting-NAME
    // that a crash left while deleting an earlier checkpoint of this name would make the rename fail
    // (ENOTEMPTY) after every later commit; nothing ever uses one, so it goes first.
    const fs::path hidden = root / (std::string(kDeletingPrefix) + name);
    remove_tree(hidden);
    rename_path(root / name, hidden);
    durability_point("checkpoint hidden for deletion");
    report.removed.push_back(name);
  }
  if (durable && !report.removed.empty()) sync_directory(root);
  for (const std::string& name : report.removed) {
    remove_tree(root / (std::string(kDeletingPrefix) + name));
    durability_point("temporary removed");
  }
  if (leftovers == Leftovers::Keep) return report;
  std::error_code error;
  fs::directory_iterator items(root, error);
  if (error == std::errc::no_such_file_or_directory) return report;  // a first run: nothing saved yet
  check(!error, "checkpoint retention: cannot list root {}: {}", root.string(), error.message());
  for (const fs::directory_entry& item : items) {
    const std::string name = item.path().filename().string();
    if (!name.starts_with(kTemporaryPrefix) && !name.starts_with(kDeletingPrefix)) continue;
    remove_tree(item.path());
    durability_point("temporary removed");
    report.removed_temporaries.push_back(name);
  }
  return report;
}

}  // namespace ember::ckpt
