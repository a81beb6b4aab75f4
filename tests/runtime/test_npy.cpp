// .npy files: round trips for every dtype, files written by NumPy (their bytes are pasted below),
// and the errors for damaged files. CSV is in test_csv.cpp.
#include <doctest/doctest.h>

#include <string_view>

#include "runtime/ember.h"
#include "runtime/temp_dir.h"

namespace test_npy {

using namespace ember;
using namespace ember::data;
using namespace ember::testing;
using namespace std::literals;

namespace {

// ---- files written by NumPy 1.24 (f = io.BytesIO(); ...; f.getvalue()) ----
// np.save(f, np.array([[1.5, -2.25, 3], [4, 5e-3, -6e7]], dtype=np.float32))
constexpr std::string_view kFloat32Matrix =
    "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
    "                                                          \n"
    "\x00\x00\xc0\x3f\x00\x00\x10\xc0\x00\x00@@\x00\x00\x80@\n\xd7\xa3;\xc0\xe1\x64\xcc"sv;
// np.save(f, np.float64(-3.75))
constexpr std::string_view kFloat64Scalar =
    "\x93NUMPY\x01\x00v\x00{'descr': '<f8', 'fortran_order': False, 'shape': (), }"
    "                                                              \n"
    "\x00\x00\x00\x00\x00\x00\x0e\xc0"sv;
// np.save(f, np.array([True, False, True]))
constexpr std::string_view kBoolVector =
    "\x93NUMPY\x01\x00v\x00{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }"
    "                                                            \n"
    "\x01\x00\x01"sv;
// np.save(f, np.asfortranarray(np.array([[1, -2, 3], [40, 50, -60]], dtype=np.int64)))
constexpr std::string_view kInt64Fortran =
    "\x93NUMPY\x01\x00v\x00{'descr': '<i8', 'fortran_order': True, 'shape': (2, 3), }"
    "                                                           \n"
    "\x01\x00\x00\x00\x00\x00\x00\x00(\x00\x00\x00\x00\x00\x00\x00\xfe\xff\xff\xff\xff\xff\xff\xff\x32\x00\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00\xc4\xff\xff\xff\xff\xff\xff\xff"sv;
// np.lib.format.write_array(f, np.array([7, -8], dtype=np.int32), version=(2, 0))
constexpr std::string_view kInt32Version2 =
    "\x93NUMPY\x02\x00t\x00\x00\x00{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }"
    "                                                          \n"
    "\x07\x00\x00\x00\xf8\xff\xff\xff"sv;
// np.save(f, np.array([[0, 255], [128, 7]], dtype=np.uint8))
constexpr std::string_view kUInt8Matrix =
    "\x93NUMPY\x01\x00v\x00{'descr': '|u1', 'fortran_order': False, 'shape': (2, 2), }"
    "                                                          \n"
    "\x00\xff\x80\x07"sv;
// np.save(f, np.array([-300, 300, -1], dtype=np.int16))
constexpr std::string_view kInt16Vector =
    "\x93NUMPY\x01\x00v\x00{'descr': '<i2', 'fortran_order': False, 'shape': (3,), }"
    "                                                            \n"
    "\xd4\xfe,\x01\xff\xff"sv;
// np.save(f, np.array([0.5, -1.25], dtype=np.float16))
constexpr std::string_view kFloat16Vector =
    "\x93NUMPY\x01\x00v\x00{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }"
    "                                                            \n"
    "\x00\x38\x00\xbd"sv;
}  // namespace

TEST_CASE("write_npy then read_npy round-trips every dtype and shape") {
  TempDir dir;
  const Tensor matrix = from_vector<float>({1.5f, -2.25f, 3.0f, 4.0f, 5e-3f, -6e7f}, {2, 3});
  write_npy(dir / "f4.npy", matrix);
  Tensor back = read_npy(dir / "f4.npy");
  CHECK(back.dtype() == kFloat32);
  CHECK(back.sizes() == Dims{2, 3});
  CHECK(back.to_vector<float>() == matrix.to_vector<float>());

  write_npy(dir / "f8.npy", full({}, -3.75, {.dtype = kFloat64}));
  back = read_npy(dir / "f8.npy");
  CHECK(back.dim() == 0);
  CHECK(back.item() == -3.75);

  const std::vector<int32_t> ints{7, -8, 2147483647, -2147483647 - 1};
  write_npy(dir / "i4.npy", from_vector(ints));
  CHECK(read_npy(dir / "i4.npy").to_vector<int32_t>() == ints);

  const std::vector<int64_t> longs{int64_t{1} << 40, -5, 9};
  write_npy(dir / "i8.npy", from_vector(longs, {3, 1}, {.dtype = kInt64}));
  back = read_npy(dir / "i8.npy");
  CHECK(back.sizes() == Dims{3, 1});
  CHECK(back.to_vector<int64_t>() == longs);

  write_npy(dir / "b1.npy", from_vector(std::vector<bool>{true, false, false, true}));
  CHECK(read_npy(dir / "b1.npy").to_vector<bool>() == std::vector<bool>{true, false, false, true});

  write_npy(dir / "f2.npy", from_vector<float>({0.5f, -1.25f, 1024.0f}, {3}, {.dtype = kFloat16}));
  back = read_npy(dir / "f2.npy");
  CHECK(back.dtype() == kFloat16);
  CHECK(back.to(kFloat32).to_vector<float>() == std::vector<float>{0.5f, -1.25f, 1024.0f});

  write_npy(dir / "empty.npy", empty({2, 0, 3}));
  back = read_npy(dir / "empty.npy");
  CHECK(back.sizes() == Dims{2, 0, 3});

  // A transposed (non-contiguous) tensor is written in its logical row-major order.
  write_npy(dir / "transposed.npy", matrix.t());
  back = read_npy(dir / "transposed.npy");
  CHECK(back.sizes() == Dims{3, 2});
  CHECK(back.to_vector<float>() == std::vector<float>{1.5f, 4.0f, -2.25f, 5e-3f, 3.0f, -6e7f});
}

TEST_CASE("write_npy produces the same bytes as numpy.save") {
  TempDir dir;
  write_npy(dir / "a.npy", from_vector<float>({1.5f, -2.25f, 3.0f, 4.0f, 5e-3f, -6e7f}, {2, 3}));
  CHECK(read_bytes(dir / "a.npy") == kFloat32Matrix);
  write_npy(dir / "b.npy", from_vector(std::vector<bool>{true, false, true}));
  CHECK(read_bytes(dir / "b.npy") == kBoolVector);
  write_npy(dir / "c.npy", full({}, -3.75, {.dtype = kFloat64}));
  CHECK(read_bytes(dir / "c.npy") == kFloat64Scalar);
}

TEST_CASE("read_npy reads files written by NumPy") {
  TempDir dir;
  Tensor tensor = read_npy(dir.file("f4.npy", kFloat32Matrix));
  CHECK(tensor.sizes() == Dims{2, 3});
  CHECK(tensor.to_vector<float>() == std::vector<float>{1.5f, -2.25f, 3.0f, 4.0f, 5e-3f, -6e7f});

  tensor = read_npy(dir.file("f8.npy", kFloat64Scalar));
  CHECK(tensor.dtype() == kFloat64);
  CHECK(tensor.dim() == 0);
  CHECK(tensor.item() == -3.75);

  CHECK(read_npy(dir.file("b1.npy", kBoolVector)).to_vector<bool>() == std::vector<bool>{true, false, true});

  // Fortran order: the file holds the columns; the tensor comes back row-major.
  tensor = read_npy(dir.file("fortran.npy", kInt64Fortran));
  CHECK(tensor.sizes() == Dims{2, 3});
  CHECK(tensor.is_contiguous());
  CHECK(tensor.to_vector<int64_t>() == std::vector<int64_t>{1, -2, 3, 40, 50, -60});

  tensor = read_npy(dir.file("v2.npy", kInt32Version2));
  CHECK(tensor.dtype() == kInt32);
  CHECK(tensor.to_vector<int32_t>() == std::vector<int32_t>{7, -8});

  // Narrow integers widen to int32, keeping their values.
  tensor = read_npy(dir.file("u1.npy", kUInt8Matrix));
  CHECK(tensor.dtype() == kInt32);
  CHECK(tensor.sizes() == Dims{2, 2});
  CHECK(tensor.to_vector<int32_t>() == std::vector<int32_t>{0, 255, 128, 7});
  CHECK(read_npy(dir.file("i2.npy", kInt16Vector)).to_vector<int32_t>() == std::vector<int32_t>{-300, 300, -1});

  tensor = read_npy(dir.file("f2.npy", kFloat16Vector));
  CHECK(tensor.dtype() == kFloat16);
  CHECK(tensor.to(kFloat32).to_vector<float>() == std::vector<float>{0.5f, -1.25f});
}

TEST_CASE("read_npy names the file and the problem for damaged files") {
  TempDir dir;
  const std::string good(kFloat32Matrix);
  // Reads damaged bytes and checks the error names the file and contains `expected`.
  auto check_error = [&](const std::string& name, const std::string& bytes, const std::string& expected) {
    const auto path = dir.file(name, bytes);
    try {
      read_npy(path);
      FAIL("no error for " << name);
    } catch (const Error& error) {
      const std::string message = error.what();
      CHECK_MESSAGE(message.find(path.string()) != std::string::npos, message);
      CHECK_MESSAGE(message.find(expected) != std::string::npos, message);
    }
  };
  check_error("magic.npy", "\x93NUMPX" + good.substr(6), "wrong magic");
  check_error("short.npy", good.substr(0, 7), "too short for the .npy preamble");
  check_error("header.npy", good.substr(0, 60), "truncated: header of 118 bytes");
  // A version 2.0 header length of 2^20 + 1 bytes, present in full: too big, not truncated.
  check_error("huge_header.npy", good.substr(0, 6) + std::string("\x02\x00\x01\x00\x10\x00", 6) +
                                     std::string((1 << 20) + 1, ' ') + good.substr(128),
              "a header of 1048577 bytes is more than the 1048576");
  check_error("data.npy", good.substr(0, good.size() - 4), "shape [2, 3] of <f4 needs 24 data bytes, the file has 20");
  check_error("extra.npy", good + "xyz", "needs 24 data bytes, the file has 27");
  check_error("version.npy", good.substr(0, 6) + "\x04" + good.substr(7), "unsupported format version 4.0");

  auto with_header = [&](std::string dict) {
    dict.resize(118, ' ');
    dict.back() = '\n';
    return good.substr(0, 10) + dict + good.substr(128);
  };
  check_error("bigendian.npy", with_header("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }"),
              "big-endian data ('>f4') is not supported");
  check_error("complex.npy", with_header("{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }"),
              "unsupported dtype '<c8'");
  check_error("uint64.npy", with_header("{'descr': '<u8', 'fortran_order': False, 'shape': (3,), }"),
              "unsupported dtype '<u8'");
  check_error("nokey.npy", with_header("{'descr': '<f4', 'shape': (2, 3), }"),
              "bad header: missing one of");
  check_error("garbage.npy", with_header("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2, 3), }"),
              "fortran_order must be True or False");
  check_error("negative.npy", with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 3), }"),
              "shape entries must be non-negative integers");
  check_error("huge.npy", with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999), }"),
              "is far larger than the 24 data bytes");
  check_error("empty_huge.npy",
              with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4611686018427387904, 4), }")
                  .substr(0, 128),  // no data bytes: it has no elements
              "has no elements but dims whose product is past what an int64 can hold");
  CHECK_THROWS_WITH_AS(read_npy(dir / "missing.npy"), doctest::Contains("missing.npy"), Error);
}

TEST_CASE("write_npy rejects what NumPy cannot represent and unwritable paths") {
  TempDir dir;
  CHECK_THROWS_WITH_AS(write_npy(dir / "bf16.npy", full({2}, 1.0, {.dtype = kBFloat16})),
                       doctest::Contains("bfloat16 has no NumPy dtype"), Error);
  CHECK_THROWS_WITH_AS(write_npy(dir / "no" / "such" / "dir.npy", full({2}, 1.0)),
                       doctest::Contains("cannot open"), Error);
}

}  // namespace test_npy
