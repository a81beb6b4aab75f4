// The checkpoints of a root directory: the `latest` pointer, listing committed step checkpoints,
// keep_last=k retention, and removal of temporary directories left by crashed saves.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ember::ckpt {

// A save writes into root/<kTemporaryPrefix><name>; retention deletes by first renaming a
// checkpoint to root/<kDeletingPrefix><name>, so a crash never leaves a half-deleted checkpoint
// visible.
constexpr std::string_view kTemporaryPrefix = ".tmp-";
constexpr std::string_view kDeletingPrefix = ".deleting-";
constexpr std::string_view kLatestFileName = "latest";
// NAME_MAX of Linux file systems. A save's directory is first .tmp-NAME, so NAME has 5 bytes less;
// retention's .deleting-NAME only ever holds step names (parse_step_name: at most 23 bytes).
constexpr size_t kMaxFileNameBytes = 255;
constexpr size_t kMaxCheckpointNameBytes = kMaxFileNameBytes - kTemporaryPrefix.size();

// A checkpoint name is a plain directory name of 1 to kMaxCheckpointNameBytes bytes that is not
// hidden and not "latest".
void check_checkpoint_name(std::string_view name);

// The step of a "step_<digits>" name, or nullopt for other names.
std::optional<int64_t> parse_step_name(std::string_view name);

struct CheckpointInfo {
  std::string name;
  int64_t step = 0;
};

// Committed step checkpoints in `root` (directories named step_<n> holding a manifest), oldest
// first. Directories with other names are not checkpoints retention manages.
std::vector<CheckpointInfo> list_checkpoints(const std::filesystem::path& root);

// Points root/latest at `name` (write a temporary file, sync, rename).
void write_latest(const std::filesystem::path& root, const std::string& name, bool durable);

// The checkpoint `latest` names if it is committed, else the newest committed step checkpoint,
// else nullopt.
std::optional<std::filesystem::path> latest_checkpoint(const std::filesystem::path& root);

struct RetentionReport {
  std::vector<std::string> removed;             // committed checkpoints deleted
  std::vector<std::string> removed_temporaries; // leftovers of crashed saves and deletions
};

// What retention does with the .tmp-* and .deleting-* directories it did not create.
enum class Leftovers {
  Keep,    // another save into root may be writing its .tmp-* right now (the writer's choice)
  Remove,  // no save into root is in flight: what crashed saves and deletions left goes too
};

// Keeps the newest `keep_last` (>= 1) step checkpoints and the one `latest` names and deletes the
// other step checkpoints. With Leftovers::Remove (the default: call it when no save into `root` is
// in flight, e.g. at startup) it also removes every temporary directory in root. The writer's
// keep_last runs it after each commit with Leftovers::Keep: a concurrent save's (an async one's)
// temporary directory is not a leftover. A root that does not exist yet (a first run) has nothing
// to remove; other file-system failures throw ember::Error naming the path.
RetentionReport apply_retention(const std::filesystem::path& root, int keep_last, bool durable,
                                Leftovers leftovers = Leftovers::Remove);

}  // namespace ember::ckpt
