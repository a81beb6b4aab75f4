// Hostile manifests: each is sealed with a valid checksum (an attacker can compute one), so the
// structural checks alone must reject it, with an error naming the problem, before any data read
// or any allocation sized by the manifest's numbers.
#include <doctest/doctest.h>
#include <unistd.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "ckpt/file_io.h"
#include "ckpt/reader.h"
#include "ckpt/writer.h"
#include "tests/ckpt/helpers.h"

namespace ember::ckpt::test_hostile {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// A small two-rank checkpoint to start from: "a" sharded [6, 3] float32, "b" replicated [4].
struct Fixture {
  testing::TempDir root;
  fs::path directory = root / "step_000000001";
  json manifest;

  Fixture() {
    testing::Reference reference;
    reference.tensors["a"] = testing::patterned({6, 3}, kFloat32, 1);
    reference.sharded["a"] = true;
    reference.tensors["b"] = testing::patterned({4}, kFloat32, 2);
    reference.sharded["b"] = false;
    reference.values["step"] = int64_t{5};
    run_ranks(2, [&](Coordinator& coordinator) {
      save(coordinator, testing::rank_view(reference, coordinator.rank(), 2),
           {.root = root.path(), .name = "step_000000001", .durable = false});
    });
    manifest = json::parse(read_small_file(directory / kManifestFileName, 1 << 20));
  }

  json& entry(const std::string& name) {
    for (json& entry : manifest["entries"])
      if (entry["name"] == name) return entry;
    FAIL("no entry " << name);
    throw;
  }

  // Writes `manifest` back, sealed, and returns the error opening the checkpoint raises.
  std::string open_error() { return open_error_of_body(body_of(manifest)); }

  static std::string body_of(json document) {
    document.erase("manifest_checksum");
    std::string text = document.dump();
    text.pop_back();  // the closing brace: seal_manifest_text appends the checksum and its own
    return text;
  }

  std::string open_error_of_body(std::string body) {
    const std::string text = seal_manifest_text(std::move(body));
    std::ofstream(directory / kManifestFileName, std::ios::binary | std::ios::trunc) << text;
    try {
      CheckpointReader reader(directory);
      reader.verify();
    } catch (const Error& error) {
      return error.what();
    }
    return "(no error)";
  }
};

TEST_CASE("hostile manifest: sizes that overflow, negative and huge dims") {
  Fixture fixture;
  fixture.entry("b")["shape"] = {uint64_t{1} << 62};  // 2^64 bytes of float32
  CHECK(fixture.open_error().find("entry 'b' shape [4611686018427387904] of float32 is larger "
                                  "than 2^62 bytes") != std::string::npos);

  Fixture negative;
  negative.entry("a")["shape"] = {-6, 3};
  CHECK(negative.open_error().find("entry 'a': shape: -6 is negative") != std::string::npos);

  Fixture huge;
  huge.entry("a")["shape"] = {uint64_t{1} << 63, 3};
  CHECK(huge.open_error().find("9223372036854775808 is larger than the limit") != std::string::npos);

  Fixture rank;
  rank.entry("a")["shape"] = json::array({1, 1, 1, 1, 1, 1, 1, 1, 1});
  CHECK(rank.open_error().find("9 dimensions; at most 8") != std::string::npos);
}

TEST_CASE("hostile manifest: a chunk that claims petabytes is refused without reading") {
  Fixture fixture;
  const uint64_t rows = uint64_t{1} << 40;
  fixture.entry("b")["shape"] = {rows};
  json& chunk = fixture.entry("b")["chunks"][0];
  chunk["shape"] = {rows};
  chunk["length"] = rows * 4;
  chunk["block_bytes"] = 64ull << 20;
  chunk["checksums"] = json::array();
  for (int i = 0; i < 65536; ++i) chunk["checksums"].push_back("0123456789abcdef");
  const std::string error = fixture.open_error();
  CHECK(error.find("entry 'b' chunk 0") != std::string::npos);
  CHECK(error.find("ends past the end of") != std::string::npos);

  Fixture offset;
  offset.entry("b")["chunks"][0]["offset"] = INT64_MAX;
  CHECK(offset.open_error().find("ends past the end of") != std::string::npos);
}

TEST_CASE("hostile manifest: rows covered twice, rows missing, shared byte ranges") {
  Fixture twice;
  json& chunks = twice.entry("a")["chunks"];
  chunks[1]["start"] = {2, 0};  // rank 1's rows [3, 6) claimed as [2, 5): row 2 twice
  CHECK(twice.open_error().find("entry 'a' rows [2, 3) are covered twice") != std::string::npos);

  Fixture missing;
  missing.entry("a")["chunks"].erase(1);
  CHECK(missing.open_error().find("entry 'a' rows [3, 6) are in no chunk") != std::string::npos);

  Fixture shared;  // "b" points at the bytes of one of "a"'s chunks in the same file
  json& a_chunk = shared.entry("a")["chunks"][0];
  json& b_chunk = shared.entry("b")["chunks"][0];
  b_chunk["file"] = a_chunk["file"];
  b_chunk["offset"] = a_chunk["offset"];
  CHECK(shared.open_error().find("overlap bytes") != std::string::npos);
}

TEST_CASE("hostile manifest: duplicate names and duplicate keys") {
  Fixture names;
  names.manifest["entries"].push_back(names.entry("step"));
  CHECK(names.open_error().find("entry name 'step' appears twice") != std::string::npos);

  Fixture keys;
  std::string body = Fixture::body_of(keys.manifest);
  body.insert(1, "\"world_size\":7,");
  CHECK(keys.open_error_of_body(body).find("duplicate key \"world_size\"") != std::string::npos);
}

TEST_CASE("hostile manifest: paths outside the checkpoint directory") {
  for (const auto& [name, expected] :
       std::vector<std::pair<std::string, std::string>>{
           {"../rank_00000.bin", "escapes the checkpoint directory"},
           {"..", "escapes the checkpoint directory"},
           {"/etc/passwd", "is an absolute path"},
           {"sub/rank_00000.bin", "is not a plain file name"},
           {".hidden", "starts with '.'"},
           {"manifest.json", "may not be named manifest.json"}}) {
    CAPTURE(name);
    Fixture fixture;
    const std::string old_name = fixture.manifest["files"][0]["name"];
    fixture.manifest["files"][0]["name"] = name;
    for (json& entry : fixture.manifest["entries"])
      if (entry["kind"] == "tensor")
        for (json& chunk : entry["chunks"])
          if (chunk["file"] == old_name) chunk["file"] = name;
    CHECK(fixture.open_error().find(expected) != std::string::npos);
  }
}

TEST_CASE("hostile manifest: a data file that is a symbolic link is not followed") {
  Fixture fixture;
  const fs::path data = fixture.directory / "rank_00001.bin";
  fs::rename(data, fixture.root / "elsewhere.bin");
  fs::create_symlink(fixture.root / "elsewhere.bin", data);
  const std::string error = fixture.open_error();
  CHECK(error.find("cannot open") != std::string::npos);
  CHECK(error.find("rank_00001.bin") != std::string::npos);
}

TEST_CASE("hostile manifest: types, versions, kinds and lengths that disagree") {
  const std::vector<std::pair<std::function<void(Fixture&)>, std::string>> cases = {
      {[](Fixture& f) { f.entry("a")["dtype"] = "float128"; }, "unknown dtype \"float128\""},
      {[](Fixture& f) { f.manifest["format_version"] = 2; }, "format version 2 is not supported"},
      {[](Fixture& f) { f.manifest["world_size"] = 0; }, "world_size 0 must be at least 1"},
      {[](Fixture& f) { f.manifest["files"][1]["rank"] = 5; }, "belongs to rank 5, outside"},
      {[](Fixture& f) { f.entry("a")["kind"] = "pickle"; }, "unknown kind \"pickle\""},
      {[](Fixture& f) { f.entry("a")["dtype"] = "float64"; }, "disagrees with"},
      {[](Fixture& f) { f.entry("a")["chunks"][0]["checksums"].push_back("0000000000000000"); },
       "2 checksums for 1 blocks"},
      {[](Fixture& f) { f.entry("a")["chunks"][0]["checksums"][0] = "0X12"; },
       "is not 16 lowercase hex digits"},
      {[](Fixture& f) { f.entry("a")["chunks"][0]["start"] = {0, 1}; }, "not a slab of whole rows"},
      {[](Fixture& f) { f.entry("step")["value"] = "5"; }, "expected an integer, got string"},
      {[](Fixture& f) { f.entry("step")["type"] = "function"; }, "unknown value type \"function\""},
      {[](Fixture& f) { f.manifest["format"] = "pickle"; }, "not an ember checkpoint manifest"},
      {[](Fixture& f) { f.entry("a")["extra"] = 1; }, "unknown member \"extra\""},
      {[](Fixture& f) { f.manifest["files"][0]["size"] = f.manifest["files"][0]["size"].get<int>() + 1; },
       "bytes but the manifest says"},
      {[](Fixture& f) { f.entry("b")["sharding"] = "dim0"; f.entry("a")["sharding"] = "replicated"; },
       "replicated entry 'a' has 2 chunks"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    CAPTURE(i);
    Fixture fixture;
    cases[i].first(fixture);
    const std::string error = fixture.open_error();
    CAPTURE(error);
    CHECK(error.find(cases[i].second) != std::string::npos);
    CHECK(error.find("step_000000001") != std::string::npos);  // every error names the checkpoint
  }
}

TEST_CASE("hostile manifest: deep nesting, an unsealed text and an oversized file") {
  Fixture deep;
  std::string body = Fixture::body_of(deep.manifest);
  // Appended piece by piece: `"..." + std::string(...)` draws a false -Warray-bounds from GCC 12.
  body += ",\"x\":";
  body.append(1'000'000, '[');
  body.append(1'000'000, ']');
  CHECK(deep.open_error_of_body(body).find("nested deeper than 8 levels") != std::string::npos);

  Fixture unsealed;
  std::ofstream(unsealed.directory / kManifestFileName, std::ios::trunc) << unsealed.manifest.dump();
  try {
    CheckpointReader reader(unsealed.directory);
    FAIL("opened an unsealed manifest");
  } catch (const Error& error) {
    CHECK(std::string(error.what()).find("does not end with its checksum") != std::string::npos);
  }

  Fixture oversized;  // sparse: costs no disk
  fs::resize_file(oversized.directory / kManifestFileName, kMaxManifestBytes + 1);
  CHECK_THROWS_WITH_AS(CheckpointReader(oversized.directory),
                       doctest::Contains("more than the limit of 67108864"), Error);
}

}  // namespace
}  // namespace ember::ckpt::test_hostile
