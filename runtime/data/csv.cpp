// read_csv: the file (gzip or plain, through zlib) is read whole, then parsed line by line with
// std::from_chars, which is exact and locale-independent.
#include "runtime/data/csv.h"

#include <zlib.h>

#include <cerrno>
#include <charconv>
#include <locale.h>  // newlocale, strtod_l: POSIX
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace ember::data {

namespace {

std::string read_all(const std::filesystem::path& path, const std::string& name) {
  gzFile file = gzopen(path.c_str(), "rb");
  check(file != nullptr, "read_csv: cannot open {}: {}", name, std::strerror(errno));
  std::string text;
  char chunk[1 << 16];
  int read = 0;
  while ((read = gzread(file, chunk, sizeof(chunk))) > 0) text.append(chunk, static_cast<size_t>(read));
  int status = Z_OK;
  const std::string message = gzerror(file, &status);
  gzclose(file);
  // A truncated gzip stream reads what it can and reports Z_BUF_ERROR: that is corruption too.
  check(read == 0 && (status == Z_OK || status == Z_STREAM_END),
        "read_csv: {}: cannot decompress: {}", name, message);
  return text;
}

std::string_view trim_spaces(std::string_view field) {
  while (!field.empty() && (field.front() == ' ' || field.front() == '\t')) field.remove_prefix(1);
  while (!field.empty() && (field.back() == ' ' || field.back() == '\t')) field.remove_suffix(1);
  return field;
}

// A field without its surrounding spaces and quotes.
std::string_view trim(std::string_view field) {
  field = trim_spaces(field);
  if (field.size() >= 2 && field.front() == '"' && field.back() == '"') field = field.substr(1, field.size() - 2);
  return field;
}

// What strtod gives for a number beyond the type's range, which from_chars leaves unparsed: an
// overflow is +-inf and an underflow the nearest denormal or +-0, as numpy's loadtxt reads them.
// In the "C" locale, as from_chars always is.
template <typename T>
T out_of_range_value(std::string_view field) {
  static const locale_t c_locale = newlocale(LC_ALL_MASK, "C", locale_t{});
  const std::string text(field);
  if constexpr (std::is_same_v<T, float>) {
    return strtof_l(text.c_str(), nullptr, c_locale);
  } else {
    return strtod_l(text.c_str(), nullptr, c_locale);
  }
}

// Parses one field as T; false when it is not exactly one number of that type. A float parses
// straight into its own type, so each value is rounded once from its decimal text.
template <typename T>
bool parse_number(std::string_view field, T& value) {
  // from_chars rejects a leading '+'; stripping it must not let "+-1" through as -1.
  if (field.size() >= 2 && field.front() == '+' && field[1] != '-' && field[1] != '+') field.remove_prefix(1);
  if (field.empty()) return false;
  const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (end != field.data() + field.size()) return false;
  if constexpr (std::is_floating_point_v<T>) {
    if (error == std::errc::result_out_of_range) {
      value = out_of_range_value<T>(field);
      return true;
    }
  }
  return error == std::errc();
}

template <typename T, typename Value>
void copy_values(T* out, const std::vector<Value>& values) {
  for (size_t i = 0; i < values.size(); ++i) out[i] = static_cast<T>(values[i]);
}

// A field as an error message can show it: control bytes (a NUL would end the message, a '\r'
// would move the terminal's cursor) as \xNN.
std::string printable(std::string_view field) {
  std::string shown;
  for (const char c : field) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) shown += fmt::format("\\x{:02x}", byte);
    else shown += c;
  }
  return shown;
}

}  // namespace

Tensor read_csv(const std::filesystem::path& path, CsvOptions options, Where where) {
  CallSiteScope site(where);
  const std::string name = fmt::format("'{}'", path.string());
  const DType dtype = options.dtype;
  check(dtype == kFloat32 || dtype == kFloat64 || dtype == kInt32 || dtype == kInt64,
        "read_csv: {}: dtype {} is not supported (use float32, float64, int32 or int64)", name, dtype);
  check(options.delimiter != '"' && options.delimiter != '\n' && options.delimiter != '\r',
        "read_csv: {}: the delimiter cannot be a quote or a line break", name);
  const bool integral = dtype == kInt32 || dtype == kInt64;
  const std::string text = read_all(path, name);

  std::vector<double> floats;
  std::vector<int64_t> integers;
  int64_t columns = -1, rows = 0, columns_line = 0;
  bool header_pending = options.header;
  size_t line_start = 0;
  for (int64_t line_number = 1; line_start < text.size(); ++line_number) {
    // Lines end in "\n", "\r\n" (Windows) or a lone "\r" (classic Mac OS), as numpy reads them.
    size_t line_end = text.find_first_of("\r\n", line_start);
    if (line_end == std::string::npos) line_end = text.size();
    std::string_view line(text.data() + line_start, line_end - line_start);
    const bool crlf = line_end + 1 < text.size() && text[line_end] == '\r' && text[line_end + 1] == '\n';
    line_start = line_end + (crlf ? 2 : 1);
    if (trim_spaces(line).empty()) continue;  // a line holding "" is an empty field, not a blank line
    if (header_pending) {
      header_pending = false;
      continue;
    }
    int64_t fields = 0;
    size_t field_start = 0;
    while (true) {
      const size_t field_end = std::min(line.find(options.delimiter, field_start), line.size());
      const std::string_view field = trim(line.substr(field_start, field_end - field_start));
      ++fields;
      bool parsed;
      if (integral) {
        int64_t value = 0;
        parsed = parse_number(field, value) &&
                 (dtype == kInt64 || (value >= std::numeric_limits<int32_t>::min() &&
                                      value <= std::numeric_limits<int32_t>::max()));
        integers.push_back(value);
      } else if (dtype == kFloat32) {
        float value = 0;
        parsed = parse_number(field, value);
        floats.push_back(value);  // exact in double
      } else {
        double value = 0;
        parsed = parse_number(field, value);
        floats.push_back(value);
      }
      check(parsed, "read_csv: {} line {}, field {}: '{}' is not {}", name, line_number, fields, printable(field),
            integral ? fmt::format("an {} integer", dtype) : std::string("a number"));
      if (field_end >= line.size()) break;
      field_start = field_end + 1;
    }
    if (columns < 0) {
      columns = fields;
      columns_line = line_number;
    }
    check(fields == columns, "read_csv: {} line {} has {} fields, expected {} (as on line {})", name,
          line_number, fields, columns, columns_line);
    ++rows;
  }

  Tensor result = make_tensor({rows, std::max<int64_t>(columns, 0)}, dtype, kCPU);
  if (dtype == kFloat32) copy_values(result.data_ptr<float>(), floats);
  if (dtype == kFloat64) copy_values(result.data_ptr<double>(), floats);
  if (dtype == kInt32) copy_values(result.data_ptr<int32_t>(), integers);
  if (dtype == kInt64) copy_values(result.data_ptr<int64_t>(), integers);
  return result;
}

}  // namespace ember::data
