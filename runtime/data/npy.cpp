// .npy reading and writing. The header is a Python dict literal; we parse exactly the subset NumPy
// writes ({'descr': ..., 'fortran_order': ..., 'shape': (...), }) and reject everything else.
#include "runtime/data/npy.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstring>
#include <fstream>
#include <limits>
#include <string_view>
#include <vector>

#include "runtime/dispatch.h"
#include "runtime/functional.h"

namespace ember::data {

static_assert(std::endian::native == std::endian::little, "the .npy reader assumes a little-endian host");

namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr size_t kMaxHeaderBytes = 1 << 20;  // real headers are ~100 bytes; anything huge is corrupt

// How the file's elements map to an ember dtype: copied as they are, or widened integer by integer.
struct ElementType {
  DType dtype;
  size_t file_bytes;          // bytes per element in the file
  bool is_signed = true;      // for widened integers
  bool widened = false;
};

ElementType element_type(const std::string& descr, const std::string& where) {
  check(descr.size() >= 3, "read_npy: {}: unsupported dtype '{}'", where, descr);
  const char order = descr[0];
  check(order != '>', "read_npy: {}: big-endian data ('{}') is not supported; save it as little-endian "
        "(arr.astype(arr.dtype.newbyteorder('<')))", where, descr);
  check(order == '<' || order == '|' || order == '=', "read_npy: {}: unsupported dtype '{}'", where, descr);
  const std::string_view code = std::string_view(descr).substr(1);
  if (code == "f4") return {kFloat32, 4};
  if (code == "f8") return {kFloat64, 8};
  if (code == "f2") return {kFloat16, 2};
  if (code == "i4") return {kInt32, 4};
  if (code == "i8") return {kInt64, 8};
  if (code == "b1") return {kBool, 1};
  if (code == "u1") return {kInt32, 1, false, true};
  if (code == "i1") return {kInt32, 1, true, true};
  if (code == "i2") return {kInt32, 2, true, true};
  if (code == "u2") return {kInt32, 2, false, true};
  if (code == "u4") return {kInt64, 4, false, true};
  fail("read_npy: {}: unsupported dtype '{}' (supported: f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 b1)", where, descr);
}

std::string_view descr_for(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "<f4";
    case DType::Float64: return "<f8";
    case DType::Float16: return "<f2";
    case DType::Int32: return "<i4";
    case DType::Int64: return "<i8";
    case DType::Bool: return "|b1";
    case DType::BFloat16: break;
  }
  fail("write_npy: {} has no NumPy dtype; convert it first, e.g. tensor.to(kFloat32)", dtype);
}

struct Header {
  std::string descr;
  bool fortran_order = false;
  Dims shape;
};

// A cursor over the header text; every error names the file and quotes the header.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& where) : text_(text), where_(where) {}

  Header parse() {
    Header header;
    bool seen_descr = false, seen_order = false, seen_shape = false;
    expect('{');
    while (!accept('}')) {
      const std::string key = quoted();
      expect(':');
      if (key == "descr") {
        require(peek() != '[', "structured dtypes are not supported");
        header.descr = quoted();
        seen_descr = true;
      } else if (key == "fortran_order") {
        header.fortran_order = boolean();
        seen_order = true;
      } else if (key == "shape") {
        header.shape = shape();
        seen_shape = true;
      } else {
        bad(fmt::format("unexpected key '{}'", key));
      }
      if (!accept(',')) {
        expect('}');
        break;
      }
    }
    skip_space();
    require(position_ == text_.size(), "text after the closing '}'");
    require(seen_descr && seen_order && seen_shape, "missing one of 'descr', 'fortran_order', 'shape'");
    return header;
  }

 private:
  [[noreturn]] void bad(const std::string& what) {
    fail("read_npy: {}: bad header: {} (header: {})", where_, what, text_);
  }
  void require(bool condition, const char* what) {
    if (!condition) bad(what);
  }
  void skip_space() {
    while (position_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[position_]))) ++position_;
  }
  char peek() {
    skip_space();
    return position_ < text_.size() ? text_[position_] : '\0';
  }
  bool accept(char c) {
    if (peek() != c) return false;
    ++position_;
    return true;
  }
  void expect(char c) {
    if (!accept(c)) bad(fmt::format("expected '{}' at offset {}", c, position_));
  }
  std::string quoted() {
    const char quote = peek();
    require(quote == '\'' || quote == '"', "expected a quoted string");
    const size_t close = text_.find(quote, position_ + 1);
    require(close != std::string_view::npos, "unterminated string");
    std::string value(text_.substr(position_ + 1, close - position_ - 1));
    position_ = close + 1;
    return value;
  }
  bool boolean() {
    skip_space();
    for (auto [word, value] : {std::pair{std::string_view("True"), true}, {std::string_view("False"), false}}) {
      if (text_.substr(position_, word.size()) == word) {
        position_ += word.size();
        return value;
      }
    }
    bad("fortran_order must be True or False");
  }
  Dims shape() {
    Dims dims;
    expect('(');
    while (!accept(')')) {
      skip_space();
      int64_t size = 0;
      size_t digits = 0;
      while (position_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[position_]))) {
        require(size <= (std::numeric_limits<int64_t>::max() - 9) / 10, "shape entry too large");
        size = size * 10 + (text_[position_++] - '0');
        ++digits;
      }
      require(digits > 0, "shape entries must be non-negative integers");
      require(dims.size() < Dims::kMaxRank, "more dims than ember supports (8)");
      dims.push_back(size);
      if (!accept(',')) {
        expect(')');
        break;
      }
    }
    return dims;
  }

  std::string_view text_;
  const std::string& where_;
  size_t position_ = 0;
};

// Element `index` of a little-endian integer array of `bytes`-wide elements, widened to int64.
int64_t widen(const unsigned char* data, size_t index, size_t bytes, bool is_signed) {
  uint64_t value = 0;
  for (size_t b = 0; b < bytes; ++b) value |= uint64_t{data[index * bytes + b]} << (8 * b);
  if (is_signed && bytes < 8 && (value >> (8 * bytes - 1)) != 0) value |= ~uint64_t{0} << (8 * bytes);
  return static_cast<int64_t>(value);
}

}  // namespace

Tensor read_npy(const std::filesystem::path& path, Where where) {
  CallSiteScope site(where);
  const std::string name = fmt::format("'{}'", path.string());
  std::error_code error;
  const uintmax_t file_bytes = std::filesystem::file_size(path, error);
  check(!error, "read_npy: cannot read {}: {}", name, error.message());
  std::ifstream file(path, std::ios::binary);
  check(file.good(), "read_npy: cannot open {}: {}", name, std::strerror(errno));

  // Preamble: magic, major/minor version, header length (2 bytes in 1.0, 4 bytes in 2.0/3.0).
  char preamble[12] = {};
  check(file_bytes >= 10 && file.read(preamble, 10), "read_npy: {}: truncated: {} bytes is too short for "
        "the .npy preamble", name, file_bytes);
  check(std::string_view(preamble, 6) == kMagic, "read_npy: {}: not a .npy file (wrong magic bytes)", name);
  const int major = static_cast<unsigned char>(preamble[6]);
  const int minor = static_cast<unsigned char>(preamble[7]);
  check((major == 1 || major == 2 || major == 3) && minor == 0,
        "read_npy: {}: unsupported format version {}.{} (supported: 1.0, 2.0, 3.0)", name, major, minor);
  size_t header_bytes = static_cast<unsigned char>(preamble[8]) | static_cast<unsigned char>(preamble[9]) << 8;
  size_t preamble_bytes = 10;
  if (major >= 2) {
    check(file_bytes >= 12 && file.read(preamble + 10, 2), "read_npy: {}: truncated preamble", name);
    header_bytes |= size_t{static_cast<unsigned char>(preamble[10])} << 16 |
                    size_t{static_cast<unsigned char>(preamble[11])} << 24;
    preamble_bytes = 12;
  }
  check(header_bytes <= kMaxHeaderBytes, "read_npy: {}: a header of {} bytes is more than the {} a .npy reader "
        "accepts (real headers are about 100 bytes): the file is corrupt", name, header_bytes, kMaxHeaderBytes);
  check(preamble_bytes + header_bytes <= file_bytes,
        "read_npy: {}: truncated: header of {} bytes but the file has {} bytes", name, header_bytes, file_bytes);
  std::string header_text(header_bytes, '\0');
  check(static_cast<bool>(file.read(header_text.data(), static_cast<std::streamsize>(header_bytes))),
        "read_npy: {}: could not read the header", name);
  const Header header = HeaderParser(header_text, name).parse();
  const ElementType type = element_type(header.descr, name);

  // The data must be exactly numel elements; check before allocating so a corrupt shape cannot
  // ask for terabytes.
  const uintmax_t data_bytes = file_bytes - preamble_bytes - header_bytes;
  const bool has_zero = std::find(header.shape.begin(), header.shape.end(), 0) != header.shape.end();
  uintmax_t expected = has_zero ? 0 : type.file_bytes;
  bool overflow = false;
  for (int64_t size : header.shape) {
    overflow = overflow || __builtin_mul_overflow(expected, static_cast<uintmax_t>(size), &expected);
  }
  check(!overflow, "read_npy: {}: size mismatch: shape {} of {} is far larger than the {} data bytes in "
        "the file", name, header.shape, header.descr, data_bytes);
  check(expected == data_bytes, "read_npy: {}: size mismatch: shape {} of {} needs {} data bytes, the file "
        "has {}", name, header.shape, header.descr, expected, data_bytes);
  // No elements, yet a tensor of that shape has strides: the other dims' product must fit int64.
  int64_t stride = 1;
  for (int64_t size : header.shape)
    check(!__builtin_mul_overflow(stride, std::max<int64_t>(size, 1), &stride),
          "read_npy: {}: shape {} has no elements but dims whose product is past what an int64 can hold", name,
          header.shape);

  // Fortran order stores the transpose in C order: read that, then permute the dims back.
  Dims stored_shape = header.shape;
  if (header.fortran_order) std::reverse(stored_shape.begin(), stored_shape.end());
  Tensor tensor = make_tensor(stored_shape, type.dtype, kCPU);
  std::vector<unsigned char> raw(type.widened || type.dtype == kBool ? expected : 0);
  char* target = raw.empty() ? static_cast<char*>(tensor.raw_data_ptr()) : reinterpret_cast<char*>(raw.data());
  check(static_cast<bool>(file.read(target, static_cast<std::streamsize>(expected))),
        "read_npy: {}: could not read {} data bytes", name, expected);
  const size_t numel = static_cast<size_t>(tensor.numel());
  if (type.dtype == kBool) {
    bool* out = tensor.data_ptr<bool>();
    for (size_t i = 0; i < numel; ++i) out[i] = raw[i] != 0;  // any non-zero byte is True, as in NumPy
  } else if (type.widened && type.dtype == kInt32) {
    int32_t* out = tensor.data_ptr<int32_t>();
    for (size_t i = 0; i < numel; ++i) out[i] = static_cast<int32_t>(widen(raw.data(), i, type.file_bytes, type.is_signed));
  } else if (type.widened) {
    int64_t* out = tensor.data_ptr<int64_t>();
    for (size_t i = 0; i < numel; ++i) out[i] = widen(raw.data(), i, type.file_bytes, type.is_signed);
  }
  if (header.fortran_order && tensor.dim() >= 2) {
    Dims reverse;
    for (int dim = tensor.dim() - 1; dim >= 0; --dim) reverse.push_back(dim);
    tensor = tensor.permute(reverse).contiguous();
  }
  return tensor;
}

void write_npy(const std::filesystem::path& path, const Tensor& tensor, Where where) {
  CallSiteScope site(where);
  check(tensor.defined(), "write_npy: '{}': the tensor is undefined", path.string());
  const std::string_view descr = descr_for(tensor.dtype());
  const Tensor host = host_values("write_npy", tensor.detach(), /*dense=*/true);

  std::string shape;
  for (int64_t size : host.sizes()) shape += fmt::format("{}, ", size);
  if (host.dim() > 1) shape.resize(shape.size() - 2);  // (3, 4); a 1-d shape keeps its comma: (5,)
  if (host.dim() == 1) shape.pop_back();
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr, shape);
  // NumPy pads the header with spaces and a newline so the data starts 64-byte aligned.
  const bool version2 = header.size() + 1 + 10 > 65535;
  const size_t preamble_bytes = version2 ? 12 : 10;
  header.append(63 - (preamble_bytes + header.size()) % 64, ' ');
  header.push_back('\n');

  std::string preamble(kMagic);
  preamble += static_cast<char>(version2 ? 2 : 1);
  preamble += '\0';
  for (size_t b = 0; b < preamble_bytes - 8; ++b) preamble += static_cast<char>((header.size() >> (8 * b)) & 0xff);

  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  check(file.good(), "write_npy: cannot open '{}' for writing: {}", path.string(), std::strerror(errno));
  file.write(preamble.data(), static_cast<std::streamsize>(preamble.size()));
  file.write(header.data(), static_cast<std::streamsize>(header.size()));
  file.write(static_cast<const char*>(host.raw_data_ptr()), static_cast<std::streamsize>(host.nbytes()));
  file.close();
  check(!file.fail(), "write_npy: writing '{}' failed: {}", path.string(), std::strerror(errno));
}

}  // namespace ember::data
