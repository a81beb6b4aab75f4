// Corruption: every file of a checkpoint (manifest and data) truncated or bit-flipped at several
// positions. Every load must fail with an error naming the damaged file, and leave the live state
// untouched; none may return wrong data.
#include <doctest/doctest.h>

#include <fstream>
#include <vector>

#include "ckpt/load.h"
#include "ckpt/reader.h"
#include "ckpt/writer.h"
#include "tests/ckpt/helpers.h"

namespace ember::ckpt::test_corruption {
namespace {

namespace fs = std::filesystem;

void flip_bit(const fs::path& path, uint64_t position, int bit) {
  std::fstream file(path, std::ios::binary | std::ios::in | std::ios::out);
  file.seekg(static_cast<std::streamoff>(position));
  char byte = 0;
  file.get(byte);
  byte = static_cast<char>(byte ^ (1 << bit));
  file.seekp(static_cast<std::streamoff>(position));
  file.put(byte);
}

// Loads `directory` on two ranks; returns the error (empty if the load succeeded) after checking
// that a failed load changed nothing.
std::string try_load(const testing::Reference& reference, const fs::path& directory) {
  std::vector<RankState> live(2);
  std::vector<std::map<std::string, Tensor>> before(2);
  for (int rank = 0; rank < 2; ++rank) {
    live[rank] = testing::live_state(reference, rank, 2, 500 + rank);
    for (const auto& [name, local] : live[rank].tensors()) before[rank][name] = testing::byte_clone(local.tensor);
  }
  std::vector<std::string> errors(2);
  run_ranks(2, [&](Coordinator& coordinator) {
    try {
      load(coordinator, directory, live[coordinator.rank()]);
    } catch (const Error& error) {
      errors[coordinator.rank()] = error.what();
    }
  });
  CHECK(errors[0] == errors[1]);  // every rank reports the same failure
  if (errors[0].empty()) {
    for (int rank = 0; rank < 2; ++rank) testing::check_matches(live[rank], reference);
    return "";
  }
  for (int rank = 0; rank < 2; ++rank)
    for (const auto& [name, local] : live[rank].tensors())
      CHECK_MESSAGE(testing::same_bytes(local.tensor, before[rank][name]), name);
  return errors[0];
}

TEST_CASE("corruption: truncated or bit-flipped files always fail the load, naming the file") {
  testing::TempDir root;
  testing::Reference reference = testing::awkward_reference(3);
  reference.tensors["layer.multi_block"] = testing::patterned({300, 1000}, kFloat32, 9);  // 1.2 MB
  reference.sharded["layer.multi_block"] = true;
  run_ranks(3, [&](Coordinator& coordinator) {
    save(coordinator, testing::rank_view(reference, coordinator.rank(), 3),
         {.root = root.path(), .name = "step_000000001", .durable = false});
  });
  const fs::path pristine = root / "step_000000001";
  REQUIRE(try_load(reference, pristine).empty());

  int damaged_loads = 0;
  for (const fs::directory_entry& item : fs::directory_iterator(pristine)) {
    const std::string file = item.path().filename().string();
    const uint64_t size = fs::file_size(item.path());
    REQUIRE(size > 0);
    const std::vector<uint64_t> positions = {0, 1, size / 3, size / 2, size - 17 < size ? size - 17 : 0,
                                             size - 1};
    for (uint64_t position : positions) {
      for (const bool truncate : {true, false}) {
        CAPTURE(file);
        CAPTURE(position);
        CAPTURE(truncate);
        const fs::path copy = root / "damaged";
        fs::remove_all(copy);
        fs::copy(pristine, copy);
        if (truncate) fs::resize_file(copy / file, position);
        else flip_bit(copy / file, position, static_cast<int>(position % 8));
        const std::string error = try_load(reference, copy);
        CAPTURE(error);
        CHECK(!error.empty());
        const bool names_file = error.find(file) != std::string::npos ||
                                (file == kManifestFileName && error.find("manifest") != std::string::npos);
        CHECK(names_file);
        ++damaged_loads;
      }
    }
  }
  CHECK(damaged_loads == 4 * 12);
}

TEST_CASE("corruption: verify names the bad chunk and its byte range") {
  testing::TempDir root;
  testing::Reference reference;
  reference.tensors["weight"] = testing::patterned({64, 1024}, kFloat32, 4);  // 256 KiB: 4 blocks
  reference.sharded["weight"] = false;
  run_ranks(1, [&](Coordinator& coordinator) {
    save(coordinator, testing::rank_view(reference, 0, 1),
         {.root = root.path(), .name = "step_000000001", .durable = false});
  });
  const fs::path directory = root / "step_000000001";
  CheckpointReader(directory).verify();
  flip_bit(directory / "rank_00000.bin", 200000, 3);  // in the fourth 64 KiB block
  CHECK_THROWS_WITH_AS(CheckpointReader(directory).verify(),
                       doctest::Contains("checksum mismatch in entry 'weight' (rows [0, 64)), file "
                                         "rank_00000.bin bytes [196608, 262144)"),
                       Error);
  // Reading rows that avoid the damaged block still works: blocks are verified independently.
  const Tensor head = CheckpointReader(directory).read("weight", RowRange{0, 16});
  CHECK(testing::same_bytes(head, reference.tensors["weight"].narrow(0, 0, 16)));
}

TEST_CASE("corruption: a bool byte other than 0 or 1 is refused on save, read and verify, checksums valid or not") {
  testing::TempDir root;
  Tensor flags = from_vector(std::vector<bool>{false, true, true, false}, {4}, {.device = kCPU});
  RankState state;
  state.add_replicated("flags", flags);
  // Written through ember's API (raw memory): the save refuses it, naming the tensor.
  static_cast<uint8_t*>(flags.raw_data_ptr())[2] = 2;
  SingleRank single;
  CHECK_THROWS_WITH_AS(save(single, state, {.root = root.path(), .name = "refused", .durable = false}),
                       doctest::Contains("bool tensor 'flags' holds byte 2 at element 2"), Error);
  CHECK_FALSE(fs::exists(root / "refused"));
  // A file with such a byte and checksums computed over it (edited, or written by another tool):
  // the checksums match, so the bytes themselves are checked on every read.
  static_cast<uint8_t*>(flags.raw_data_ptr())[2] = 1;
  HostState host = host_state(state);
  static_cast<uint8_t*>(flags.raw_data_ptr())[3] = 255;  // host views a CPU tensor in place
  const fs::path directory =
      write_checkpoint(single, host, {.root = root.path(), .name = "edited", .durable = false});
  const std::string expected = "bool entry 'flags' holds byte 255 at element 3 (file rank_00000.bin";
  CHECK_THROWS_WITH_AS(CheckpointReader(directory).read("flags"), doctest::Contains(expected.c_str()), Error);
  CHECK_THROWS_WITH_AS(CheckpointReader(directory).verify(), doctest::Contains(expected.c_str()), Error);
  CHECK(CheckpointReader(directory).read("flags", RowRange{0, 3}).to_vector<bool>() ==
        std::vector<bool>{false, true, true});  // rows before the bad byte still read
  Tensor live = zeros({4}, {.dtype = kBool, .device = kCPU});
  RankState into;
  into.add_replicated("flags", live);
  CHECK_THROWS_WITH_AS(load(single, directory, into), doctest::Contains(expected.c_str()), Error);
  CHECK(live.to_vector<bool>() == std::vector<bool>{false, false, false, false});  // unchanged
}

}  // namespace
}  // namespace ember::ckpt::test_corruption
