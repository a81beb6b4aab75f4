// read_csv: plain and gzip files, options, the scikit-learn digits data, and malformed input.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <string_view>

#include "../digits_data.h"
#include "runtime/ember.h"
#include "runtime/temp_dir.h"

namespace test_csv {

using namespace ember;
using namespace ember::data;
using namespace ember::testing;
using namespace std::literals;

namespace {

// gzip.compress(b"1,2.5,-3\n4,5e2,6\n", mtime=0)
constexpr std::string_view kGzipCsv = "\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\x03\x33\xd4\x31\xd2\x33\xd5\xd1\x35\xe6\x32\xd1\x31M5\xd2\x31\xe3\x02\x00m*\xb4\xf7\x11\x00\x00\x00"sv;


}  // namespace

TEST_CASE("read_csv parses numbers exactly, with a header, spaces, quotes and CRLF") {
  TempDir dir;
  const auto path = dir.file("values.csv",
                             "x,y,z\r\n"
                             " 1.5 , -2e-3,+7\r\n"
                             "\r\n"
                             "\"0.1\",inf,-0\r\n"
                             "3,4,5");  // no newline at the end
  Tensor values = read_csv(path, {.header = true, .dtype = kFloat64});
  CHECK(values.dtype() == kFloat64);
  CHECK(values.sizes() == Dims{3, 3});
  const auto numbers = values.to_vector<double>();
  CHECK(numbers == std::vector<double>{1.5, -2e-3, 7, 0.1, INFINITY, -0.0, 3, 4, 5});
  // float32 rounds each value once from its decimal text.
  CHECK(read_csv(path, {.header = true}).to_vector<float>()[3] == 0.1f);
}

TEST_CASE("read_csv reads numbers beyond the type's range as numpy does: +-inf, denormals and zeros") {
  TempDir dir;
  const auto path = dir.file("range.csv", "1e400,-1e400,1e-400,-1e-400,1e-310,1e39,1e-46,3.4e38\n");
  const std::vector<double> as_f64 = read_csv(path, {.dtype = kFloat64}).to_vector<double>();
  CHECK(as_f64 == std::vector<double>{INFINITY, -INFINITY, 0.0, -0.0, 1e-310, 1e39, 1e-46, 3.4e38});
  CHECK(std::signbit(as_f64[3]));
  const std::vector<float> as_f32 = read_csv(path).to_vector<float>();
  CHECK(as_f32 == std::vector<float>{INFINITY, -INFINITY, 0.0f, -0.0f, 0.0f, INFINITY, 0.0f, 3.4e38f});
  // Once rounded: the nearest float to this text is just above 1, though its nearest double is 1 + 2^-24 + tiny,
  // which a second rounding (double, then float) takes to 1 (ties to even).
  const auto close = dir.file("close.csv", "1.0000000596046447753906250001\n");
  CHECK(read_csv(close).to_vector<float>() == std::vector<float>{std::nextafter(1.0f, 2.0f)});
}

TEST_CASE("read_csv delimiters and integer dtypes") {
  TempDir dir;
  const auto semicolons = dir.file("semicolons.csv", "1;-2\n3000000000;4\n");
  CHECK(read_csv(semicolons, {.delimiter = ';', .dtype = kInt64}).to_vector<int64_t>() ==
        std::vector<int64_t>{1, -2, 3000000000, 4});
  const auto tabs = dir.file("tabs.tsv", "1\t2\t3\n");
  Tensor row = read_csv(tabs, {.delimiter = '\t', .dtype = kInt32});
  CHECK(row.sizes() == Dims{1, 3});
  CHECK(row.to_vector<int32_t>() == std::vector<int32_t>{1, 2, 3});
  CHECK(read_csv(dir.file("blank.csv", "\n\n")).sizes() == Dims{0, 0});
}

TEST_CASE("read_csv reads gzip files through zlib") {
  TempDir dir;
  const auto path = dir.file("small.csv.gz", kGzipCsv);
  Tensor values = read_csv(path);
  CHECK(values.sizes() == Dims{2, 3});
  CHECK(values.to_vector<float>() == std::vector<float>{1, 2.5f, -3, 4, 500, 6});
  const auto truncated = dir.file("truncated.csv.gz", kGzipCsv.substr(0, kGzipCsv.size() - 6));
  CHECK_THROWS_WITH_AS(read_csv(truncated), doctest::Contains("truncated.csv.gz': cannot decompress"), Error);
}

TEST_CASE("the scikit-learn digits data loads: 1797 rows of 64 pixels and a label") {
  // The digits data scikit-learn ships: 1797 images of 8x8 pixels valued 0..16, then the label 0..9,
  // one image per line.
  const std::string path = ember::testing::digits_path();
  REQUIRE_MESSAGE(std::filesystem::exists(path), "install python3-sklearn (or set EMBER_DIGITS_PATH): " << path);
  Tensor digits = read_csv(path);
  REQUIRE(digits.sizes() == Dims{1797, 65});
  const auto values = digits.to_vector<float>();
  const std::vector<float> first(values.begin(), values.begin() + 16);
  CHECK(first == std::vector<float>{0, 0, 5, 13, 9, 1, 0, 0, 0, 0, 13, 15, 10, 15, 5, 0});
  CHECK(values[64] == 0);              // image 0 is a 0
  CHECK(values[65 + 64] == 1);         // image 1 is a 1
  CHECK(values[1796 * 65 + 2] == 10);  // the last image
  CHECK(values[1796 * 65 + 64] == 8);
  // Sums and label counts from numpy.loadtxt of the same file.
  double pixel_sum = 0, label_sum = 0;
  std::vector<int> label_counts(10, 0);
  for (int64_t row = 0; row < 1797; ++row) {
    for (int64_t column = 0; column < 64; ++column) pixel_sum += values[row * 65 + column];
    const float label = values[row * 65 + 64];
    label_sum += label;
    label_counts[static_cast<int>(label)] += 1;
  }
  CHECK(pixel_sum == 561718.0);
  CHECK(label_sum == 8070.0);
  CHECK(label_counts == std::vector<int>{178, 182, 177, 183, 181, 182, 181, 179, 174, 180});
}

TEST_CASE("read_csv names the file and line of malformed rows") {
  TempDir dir;
  const auto ragged = dir.file("ragged.csv", "1,2,3\n4,5,6\n\n7,8\n");
  CHECK_THROWS_WITH_AS(read_csv(ragged), doctest::Contains("ragged.csv' line 4 has 2 fields, expected 3 (as on line 1)"),
                       Error);
  const auto words = dir.file("words.csv", "1,2\n3,abc\n");
  CHECK_THROWS_WITH_AS(read_csv(words), doctest::Contains("words.csv' line 2, field 2: 'abc' is not a number"), Error);
  const auto empty_field = dir.file("empty_field.csv", "1,,3\n");
  CHECK_THROWS_WITH_AS(read_csv(empty_field), doctest::Contains("line 1, field 2: '' is not a number"), Error);
  const auto fraction = dir.file("fraction.csv", "1,2.5\n");
  CHECK_THROWS_WITH_AS(read_csv(fraction, {.dtype = kInt64}),
                       doctest::Contains("line 1, field 2: '2.5' is not an int64 integer"), Error);
  const auto big = dir.file("big.csv", "3000000000\n");
  CHECK_THROWS_WITH_AS(read_csv(big, {.dtype = kInt32}), doctest::Contains("'3000000000' is not an int32 integer"),
                       Error);
  const auto two_signs = dir.file("two_signs.csv", "+-1,2\n");
  for (const DType dtype : {kFloat64, kInt64})
    CHECK_THROWS_WITH_AS(read_csv(two_signs, {.dtype = dtype}), doctest::Contains("field 1: '+-1' is not"), Error);
  CHECK_THROWS_WITH_AS(read_csv(dir.file("plus.csv", "+,2\n")), doctest::Contains("field 1: '+' is not"), Error);
  // A line holding only "" is one empty field, not a blank line to skip.
  const auto quoted_empty = dir.file("quoted_empty.csv", "1,2\n\"\"\n3,4\n");
  CHECK_THROWS_WITH_AS(read_csv(quoted_empty), doctest::Contains("line 2, field 1: '' is not a number"), Error);
  CHECK_THROWS_WITH_AS(read_csv(dir / "missing.csv"), doctest::Contains("cannot open '"), Error);
  CHECK_THROWS_WITH_AS(read_csv(ragged, {.dtype = kBool}), doctest::Contains("dtype bool is not supported"), Error);
}

TEST_CASE("read_csv ends lines at a lone CR too, and shows control bytes in errors as \\xNN") {
  TempDir dir;
  // Classic Mac OS line endings, mixed with the other two: numpy reads this as three rows.
  const auto mixed = dir.file("cr_only.csv", "1,2\r3,4\r\n5,6\n");
  CHECK(read_csv(mixed, {.dtype = kInt64}).to_vector<int64_t>() == std::vector<int64_t>{1, 2, 3, 4, 5, 6});
  CHECK(read_csv(dir.file("two_cr.csv", "1\r\r2\r"), {.dtype = kInt64}).sizes() == Dims{2, 1});
  // A byte the terminal would act on, or a NUL that would end the message, is spelled out.
  const auto control = dir.file("control.csv", "1,2\x01" "3\n");
  CHECK_THROWS_WITH_AS(read_csv(control), doctest::Contains("line 1, field 2: '2\\x013' is not a number"), Error);
  const auto nul = dir.file("nul.csv", "4,5"s + '\0' + "6\n");
  CHECK_THROWS_WITH_AS(read_csv(nul), doctest::Contains("line 1, field 2: '5\\x006' is not a number"), Error);
}

}  // namespace test_csv
