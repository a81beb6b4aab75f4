// The manifest on its own: serialize -> parse round trip, exact float64 spelling, the seal, the
// balanced row split and block checksums.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>

#include "ckpt/checksum.h"
#include "ckpt/manifest.h"
#include "ckpt/manifest_json.h"
#include "ckpt/sharding.h"
#include "tests/ckpt/helpers.h"

namespace ember::ckpt::test_manifest {
namespace {

Manifest small_manifest() {
  Manifest manifest;
  manifest.world_size = 2;
  manifest.files = {{"rank_00000.bin", 40, 0}, {"rank_00001.bin", 16, 1}};
  TensorEntry weight{kFloat32, {5, 2}, Sharding::Rows, {}};
  weight.chunks.push_back({"rank_00001.bin", 0, 16, 3, 2, 65536, {checksum("abcdefghijklmnop", 16)}});
  weight.chunks.push_back({"rank_00000.bin", 0, 24, 0, 3, 65536, {0x0123456789abcdefull}});
  TensorEntry scalar{kFloat64, {}, Sharding::Replicated, {}};
  scalar.chunks.push_back({"rank_00000.bin", 32, 8, 0, 1, 65536, {42}});
  manifest.entries.push_back({"weight", weight});
  manifest.entries.push_back({"scalar", scalar});
  manifest.entries.push_back({"lr", Value{0.1}});
  manifest.entries.push_back({"step", Value{int64_t{-3}}});
  manifest.entries.push_back({"seed", Value{uint64_t{18446744073709551615ull}}});
  manifest.entries.push_back({"name", Value{std::string("wide \"mlp\"\n")}});
  manifest.entries.push_back({"betas", Value{std::vector<double>{0.9, -0.0, INFINITY}}});
  manifest.entries.push_back({"milestones", Value{std::vector<int64_t>{}}});
  manifest.entries.push_back({"warm", Value{false}});
  return manifest;
}

TEST_CASE("manifest: serialize then parse gives back every field, entries sorted by name") {
  Manifest manifest = small_manifest();
  validate_manifest(manifest, "test");
  const std::string text = serialize_manifest(manifest);
  const Manifest parsed = parse_manifest(text, "test");
  CHECK(parsed.world_size == 2);
  REQUIRE(parsed.entries.size() == manifest.entries.size());
  CHECK(parsed.entries.front().name == "betas");
  const TensorEntry& weight = parsed.find("weight")->tensor();
  CHECK(weight.shape == Dims{5, 2});
  CHECK(weight.sharding == Sharding::Rows);
  REQUIRE(weight.chunks.size() == 2);
  CHECK(weight.chunks[0].row_begin == 0);  // sorted by row once validated
  CHECK(weight.chunks[0].checksums[0] == 0x0123456789abcdefull);
  CHECK(weight.chunks[1].file == "rank_00001.bin");
  CHECK(parsed.find("scalar")->tensor().shape.empty());
  for (const Entry& entry : manifest.entries)
    if (!entry.is_tensor()) CHECK_MESSAGE(testing::same_value(parsed.find(entry.name)->value(), entry.value()), entry.name);
  CHECK(serialize_manifest(parsed) == text);  // stable
  CHECK(parsed.find("missing") == nullptr);
  CHECK_THROWS_WITH_AS(parsed.find("lr")->tensor(),
                       "checkpoint entry 'lr' is a float64 value, not a tensor", Error);
}

TEST_CASE("manifest: float64 values are spelled exactly as hex floats") {
  for (double value : {0.1, -0.0, 1e-310, 1.7976931348623157e308, 3.0, -2.5e-5}) {
    CAPTURE(value);
    const std::optional<double> back = parse_float64(format_float64(value));
    REQUIRE(back.has_value());
    CHECK(std::memcmp(&*back, &value, sizeof(double)) == 0);
  }
  CHECK(format_float64(0.5) == "0x1p-1");
  CHECK(std::isinf(*parse_float64("-inf")));
  CHECK(std::isnan(*parse_float64("nan")));
  CHECK(!parse_float64("0.5").has_value());
  CHECK(!parse_float64("0x1p-1junk").has_value());
  CHECK(!parse_float64("").has_value());
}

TEST_CASE("manifest: float64 spellings are taken and refused as FORMAT.md and ckpt_read.py do") {
  // tests/ckpt/test_ckpt_read.py checks tools/ckpt_manifest.py against the same table. A sign,
  // "inf" or "nan" after the 0x used to be accepted, and a value that rounds to 0 refused.
  const std::vector<std::pair<std::string, double>> taken = {
      {"0x1p-1080", 0.0},          {"-0x1p-1080", -0.0},      {"0x1p-1075", 0.0},
      {"0x1.8p-1075", 0x1p-1074},  {"0x1p-1074", 0x1p-1074},  {"0x1.00000000000008p0", 1.0},
      {"0x1.00000000000018p0", 0x1.0000000000002p0},          {"0x1.p1", 2.0},
      {"0xAp0", 10.0},             {"0x1P+1", 2.0},           {"-0x1.8p1", -3.0}};
  for (const auto& [text, expected] : taken) {
    CAPTURE(text);
    const std::optional<double> parsed = parse_float64(text);
    REQUIRE(parsed.has_value());
    CHECK(std::bit_cast<uint64_t>(*parsed) == std::bit_cast<uint64_t>(expected));
  }
  for (const char* text : {"0x-1.0624dd2f1a9fcp-10", "-0x-1p0", "0xinf", "0xnan", "0x+1p0", "0x1p", "0x.p1", "0x",
                           "0x1p+99999", "0x1.fffffffffffff8p1023", "0x1p1024", "0X1p0", " 0x1p0", "0x1p0 ",
                           "0x1_0p0", "+0x1p0"}) {
    CAPTURE(text);
    CHECK(!parse_float64(text).has_value());
  }
}

TEST_CASE("manifest: the seal covers every byte before it") {
  const std::string text = serialize_manifest(small_manifest());
  CHECK(text.ends_with("\"\n}\n"));
  for (size_t position : {size_t{0}, text.size() / 2, text.size() - 30}) {
    std::string damaged = text;
    damaged[position] ^= 0x01;
    CAPTURE(position);
    CHECK_THROWS_AS(parse_manifest(damaged, "m.json"), Error);
  }
  std::string changed = text;
  changed.replace(changed.find("\"world_size\": 2"), 15, "\"world_size\": 3");
  CHECK_THROWS_WITH_AS(parse_manifest(changed, "m.json"),
                       doctest::Contains("m.json: manifest checksum mismatch over bytes [0, "), Error);
  CHECK_NOTHROW(parse_manifest(changed, "m.json", {.verify_checksum = false}));
}

TEST_CASE("even_rows: balanced, contiguous, and empty for ranks past the last row") {
  for (int64_t rows : {0, 1, 2, 7, 13, 100}) {
    for (int world : {1, 2, 3, 5, 8}) {
      int64_t next = 0;
      for (int rank = 0; rank < world; ++rank) {
        const RowRange range = even_rows(rows, rank, world);
        CHECK(range.begin == next);
        CHECK(range.size() >= rows / world);
        CHECK(range.size() <= rows / world + 1);
        next = range.end;
      }
      CHECK(next == rows);
    }
  }
  CHECK(even_rows(2, 5, 8) == RowRange{2, 2});
  CHECK(intersect({0, 5}, {3, 9}) == RowRange{3, 5});
  CHECK(intersect({0, 2}, {3, 9}).empty());
}

TEST_CASE("block checksums: sizes, counts and the streaming form agree") {
  CHECK(choose_block_bytes(0) == 65536);
  CHECK(choose_block_bytes(4 << 20) == 65536);         // 64 blocks
  CHECK(choose_block_bytes(64 << 20) == 524288);       // 128 blocks
  CHECK(choose_block_bytes(uint64_t{1} << 40) == 16 << 20);
  CHECK(block_count(0, 4096) == 0);
  CHECK(block_count(4097, 4096) == 2);
  std::vector<std::byte> data(10000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::byte>(i * 7 + 1);
  const std::vector<uint64_t> sums = block_checksums(data.data(), data.size(), 4096);
  REQUIRE(sums.size() == 3);
  StreamingChecksum streaming;
  streaming.update(data.data() + 8192, 100);
  streaming.update(data.data() + 8292, 10000 - 8292);
  CHECK(streaming.digest() == sums[2]);
  CHECK(checksum_hex(0xabc) == "0000000000000abc");
  uint64_t parsed = 0;
  CHECK(parse_checksum_hex("0000000000000abc", &parsed));
  CHECK(parsed == 0xabc);
  CHECK(!parse_checksum_hex("0000000000000ABC", &parsed));
}

// The format stores XXH3-64 values: whichever code path computes them (the run-time dispatched
// AVX2 one on x86) must give the library's reference values. These were printed by the portable
// XXH3_64bits of libxxhash 0.8.1; the empty input's is the published XXH3-64 of "".
TEST_CASE("checksum: XXH3-64 reference values, one-shot and streamed") {
  const std::pair<size_t, uint64_t> references[] = {{0, 0x2d06800538d394c2ull}, {3, 0x6e3e2670e61106acull},
                                                    {100, 0x5da67eac6d4093d5ull}, {65553, 0x1a3181a31fab84c5ull},
                                                    {1000003, 0xeef8740468e373bbull}};
  for (const auto& [size, expected] : references) {
    CAPTURE(size);
    std::vector<unsigned char> data(size);
    for (size_t i = 0; i < size; ++i) data[i] = static_cast<unsigned char>(i * 131 + 7);
    CHECK(checksum(data.data(), size) == expected);
    StreamingChecksum streaming;
    for (size_t at = 0; at < size; at += 4099) streaming.update(data.data() + at, std::min<size_t>(4099, size - at));
    CHECK(streaming.digest() == expected);
  }
}

}  // namespace
}  // namespace ember::ckpt::test_manifest
