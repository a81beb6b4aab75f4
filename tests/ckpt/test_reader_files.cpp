// The reader keeps a bounded number of data files open: it used to hold every data file open from
// its constructor on, so a checkpoint of about 1000 ranks could not be read under the usual limit
// of 1024 descriptors, not even to inspect one value.
#include <doctest/doctest.h>

#include "ckpt/reader.h"
#include "ckpt/writer.h"
#include "tests/ckpt/helpers.h"

namespace ember::ckpt::test_reader_files {
namespace {

namespace fs = std::filesystem;

size_t open_descriptors() {
  size_t count = 0;
  for ([[maybe_unused]] const fs::directory_entry& item : fs::directory_iterator("/proc/self/fd")) ++count;
  return count;
}

TEST_CASE("reader files: many data files are read and verified with at most kMaxOpenDataFiles open") {
  testing::TempDir root;
  constexpr int kWorld = 40;  // more data files than the reader keeps open
  static_assert(kWorld > CheckpointReader::kMaxOpenDataFiles);
  testing::Reference reference;
  reference.tensors["w"] = testing::patterned({kWorld, 3}, kFloat32, 1);
  reference.sharded["w"] = true;
  reference.tensors["ids"] = testing::patterned({2 * kWorld}, kInt64, 2);
  reference.sharded["ids"] = true;
  reference.values["step"] = int64_t{7};
  run_ranks(kWorld, [&](Coordinator& coordinator) {
    save(coordinator, testing::rank_view(reference, coordinator.rank(), kWorld),
         {.root = root.path(), .name = "many", .durable = false});
  });

  const size_t before = open_descriptors();
  const CheckpointReader reader(root / "many");
  CHECK(reader.manifest().files.size() == kWorld);
  CHECK(open_descriptors() == before);  // every file was checked, none is kept open
  CHECK(std::get<int64_t>(reader.value("step")) == 7);
  CHECK(open_descriptors() == before);  // a value needs no data file
  CHECK(testing::same_bytes(reader.read("w"), reference.tensors.at("w")));
  CHECK(testing::same_bytes(reader.read("ids"), reference.tensors.at("ids")));
  CHECK(open_descriptors() == before + CheckpointReader::kMaxOpenDataFiles);
  reader.verify();
  CHECK(open_descriptors() == before + CheckpointReader::kMaxOpenDataFiles);
  const Tensor last_rows = reader.read("w", RowRange{kWorld - 2, kWorld});  // their files may have been closed
  CHECK(testing::same_bytes(last_rows, reference.tensors.at("w").narrow(0, kWorld - 2, 2)));
}

}  // namespace
}  // namespace ember::ckpt::test_reader_files
