// CSV files of numbers -> a 2-D tensor [rows, columns]. Files ending in anything, compressed with
// gzip or not, are read through zlib, which passes plain text through unchanged.
#pragma once

#include <filesystem>

#include "runtime/tensor.h"

namespace ember::data {

struct CsvOptions {
  char delimiter = ',';
  bool header = false;       // the first non-blank line holds column names: skip it
  DType dtype = kFloat32;    // float32, float64, int32 or int64
};

// Every non-blank line is a row; all rows must have the same number of fields. A field is a number
// (decimal, exponent, inf, nan; integers only for integer dtypes), optionally surrounded by spaces
// or double quotes; a number beyond the dtype's range reads as numpy's loadtxt reads it (+-inf, a
// denormal or +-0), each rounded once into the dtype. A malformed row is an ember::Error naming
// the path and the line number.
Tensor read_csv(const std::filesystem::path& path, CsvOptions options = {}, Where where = Where::current());

}  // namespace ember::data
