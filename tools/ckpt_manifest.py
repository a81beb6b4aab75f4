"""The manifest rules of ckpt/FORMAT.md, as the C++ reader enforces them, for tools/ckpt_read.py.

check_manifest(manifest, where) raises ValueError naming the first rule a parsed manifest breaks:
unknown members, wrong types, numbers out of range, unsafe file names, sizes that overflow,
chunks outside their rows or their file, rows covered twice or not at all, shared byte ranges.
Every number is checked before anything is sized by it. Standard library only.
"""
import json

# dtype -> (bytes per element, array typecode or None when decoded by hand)
DTYPES = {
    "float32": (4, "f"), "float64": (8, "d"), "int32": (4, "i"), "int64": (8, "q"),
    "bool": (1, "B"), "float16": (2, None), "bfloat16": (2, None),
}
# The C++ reader's limits (ckpt/manifest.h, ckpt/checksum.h, runtime/dims.h).
MAX_MANIFEST_BYTES = 64 << 20
MAX_JSON_DEPTH = 8
MAX_NAME_BYTES = 4096
MAX_WORLD_SIZE = 1 << 20
MAX_DIMS = 8
MAX_DIM = MAX_TENSOR_BYTES = 1 << 62
INT64_MIN, INT64_MAX, UINT64_MAX = -(1 << 63), (1 << 63) - 1, (1 << 64) - 1
MIN_BLOCK_BYTES, MAX_BLOCK_BYTES = 4 << 10, 64 << 20
HEX_DIGITS = frozenset("0123456789abcdef")


def _fail(where, message):
    raise ValueError(f"{where}: {message}")


def _json_type(value):
    for kind, name in ((bool, "boolean"), (int, "number"), (float, "number"), (str, "string"),
                       (list, "array"), (dict, "object")):
        if isinstance(value, kind):
            return name
    return "null"


def _member(obj, key, where):
    if key not in obj:
        _fail(where, f'missing member "{key}"')
    return obj[key]


def _members(obj, allowed, where):
    if not isinstance(obj, dict):
        _fail(where, f"expected an object, got {_json_type(obj)}")
    for key in obj:
        if key not in allowed:
            _fail(where, f'unknown member "{key}"')


def _uint(value, maximum, where):
    if type(value) is not int:  # not bool, an int subclass: JSON true is not a number
        _fail(where, f"expected a non-negative integer, got {_json_type(value)} {json.dumps(value)[:40]}")
    if value < 0:
        _fail(where, f"{value} is negative")
    if value > maximum:
        _fail(where, f"{value} is larger than the limit {maximum}")
    return value


def _int64(value, where):
    if type(value) is not int or not INT64_MIN <= value <= INT64_MAX:
        _fail(where, f"expected an int64, got {json.dumps(value)[:40]}")


def _string(value, max_bytes, where):
    if not isinstance(value, str):
        _fail(where, f"expected a string, got {_json_type(value)}")
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        _fail(where, f"string of {size} bytes exceeds {max_bytes}")
    return value


def _array(value, where):
    if not isinstance(value, list):
        _fail(where, f"expected an array, got {_json_type(value)}")
    return value


def _dims(value, where):
    if len(_array(value, where)) > MAX_DIMS:
        _fail(where, f"{len(value)} dimensions; at most {MAX_DIMS} are supported")
    return [_uint(dim, MAX_DIM, where) for dim in value]


def float64(text, where):
    """A float64 value as the C++ reader spells it: [-] then inf, nan or a 0x hex float that fits."""
    text = _string(text, 64, where)
    magnitude = text[1:] if text.startswith("-") else text
    if magnitude in ("inf", "nan") or (len(magnitude) >= 3 and magnitude.startswith("0x") and
                                       magnitude.strip() == magnitude):
        try:
            return float.fromhex(text)
        except (ValueError, OverflowError):  # 0x1p+99999 overflows
            pass
    _fail(where, f'"{text}" is not a hex float such as 0x1.8p+1')


def _check_value(kind, value, where):
    where = f"{where}: value"
    if kind == "bool":
        if not isinstance(value, bool):
            _fail(where, f"expected true or false, got {_json_type(value)}")
    elif kind == "int64":
        _int64(value, where)
    elif kind == "uint64":
        _uint(value, UINT64_MAX, where)
    elif kind == "float64":
        float64(value, where)
    elif kind == "string":
        _string(value, MAX_MANIFEST_BYTES, where)
    elif kind in ("int64_list", "float64_list"):
        for element in _array(value, where):
            _int64(element, where) if kind == "int64_list" else float64(element, where)
    else:
        _fail(where, f'unknown value type "{kind}"')


def chunk_rows(chunk, shape):
    """(first row, rows) of a checked chunk; a 0-d tensor's single chunk is its one row."""
    return (chunk["start"][0], chunk["shape"][0]) if shape else (0, 1)


def _check_chunk(chunk, shape, where):
    _members(chunk, ("file", "offset", "length", "start", "shape", "block_bytes", "checksums"), where)
    _string(_member(chunk, "file", where), 255, f"{where}: file")
    for key in ("offset", "length"):
        _uint(_member(chunk, key, where), INT64_MAX, f"{where}: {key}")
    start = _dims(_member(chunk, "start", where), f"{where}: start")
    slab = _dims(_member(chunk, "shape", where), f"{where}: shape")
    if len(start) != len(shape) or len(slab) != len(shape):
        _fail(where, f"start {start} and shape {slab} must have the tensor's {len(shape)} dimensions")
    if start[1:] != [0] * (len(shape) - 1) or slab[1:] != shape[1:]:
        _fail(where, f"start {start} shape {slab} is not a slab of whole rows of {shape}")
    block_bytes = _uint(_member(chunk, "block_bytes", where), MAX_BLOCK_BYTES, f"{where}: block_bytes")
    if block_bytes < MIN_BLOCK_BYTES:
        _fail(where, f"block_bytes {block_bytes} is below the minimum {MIN_BLOCK_BYTES}")
    for digits in _array(_member(chunk, "checksums", where), f"{where}: checksums"):
        if len(_string(digits, 64, f"{where}: checksums")) != 16 or not HEX_DIGITS.issuperset(digits):
            _fail(f"{where}: checksums", f'"{digits}" is not 16 lowercase hex digits')


def _check_entry(entry, index, where):
    at = f"{where}: entries[{index}]"
    _members(entry, ("name", "kind", "type", "value", "dtype", "shape", "sharding", "chunks"), at)
    name = _string(_member(entry, "name", at), MAX_NAME_BYTES, f"{at}: name")
    if not name or any(not 0x20 <= ord(c) <= 0x7e for c in name):
        _fail(where, f"entry name {name!r} is not 1 to {MAX_NAME_BYTES} printable ASCII bytes")
    at = f"{where}: entry {name!r}"
    kind = _string(_member(entry, "kind", at), 16, f"{at}: kind")
    if kind == "value":
        _members(entry, ("name", "kind", "type", "value"), at)
        _check_value(_string(_member(entry, "type", at), 64, f"{at}: type"), _member(entry, "value", at), at)
        return
    if kind != "tensor":
        _fail(at, f'unknown kind "{kind}" (expected tensor or value)')
    _members(entry, ("name", "kind", "dtype", "shape", "sharding", "chunks"), at)
    if _string(_member(entry, "dtype", at), 64, f"{at}: dtype") not in DTYPES:
        _fail(at, f'unknown dtype "{entry["dtype"]}"')
    shape = _dims(_member(entry, "shape", at), f"{at}: shape")
    if _string(_member(entry, "sharding", at), 16, f"{at}: sharding") not in ("replicated", "dim0"):
        _fail(at, f'unknown sharding "{entry["sharding"]}" (expected replicated or dim0)')
    for i, chunk in enumerate(_array(_member(entry, "chunks", at), f"{at}: chunks")):
        _check_chunk(chunk, shape, f"{at}: chunk {i}")


def _check_file_name(name, where):
    if not name or name.startswith("/") or "/" in name or name == "..":
        _fail(where, f"data file {name!r} is not a plain file name inside the checkpoint directory")
    if name.startswith(".") or name == "manifest.json" or any(not 0x20 < ord(c) < 0x7f for c in name):
        _fail(where, f"data file {name!r} is hidden, named manifest.json or not printable ASCII")


def _check_tensor(entry, files, ranges, where):
    """Its size without overflow, each chunk inside its file, and its rows covered exactly once."""
    shape, name, element = entry["shape"], entry["name"], DTYPES[entry["dtype"]][0]
    size = element
    for dim in shape:
        if dim and size > MAX_TENSOR_BYTES // dim:
            _fail(where, f"entry {name!r} shape {shape} of {entry['dtype']} is larger than 2^62 bytes")
        size *= dim
    rows, row_bytes = (shape[0] if shape else 1), element
    for dim in shape[1:]:
        row_bytes *= dim
    if entry["sharding"] == "dim0" and not shape:
        _fail(where, f"entry {name!r} is 0-d and cannot be sharded by rows")
    if entry["sharding"] == "replicated" and len(entry["chunks"]) != (1 if rows else 0):
        _fail(where, f"replicated entry {name!r} has {len(entry['chunks'])} chunks; it is written once")
    covered = 0
    for i, chunk in sorted(enumerate(entry["chunks"]), key=lambda pair: chunk_rows(pair[1], shape)):
        first, count = chunk_rows(chunk, shape)
        at = f"{where}: entry {name!r} chunk {i} (file {chunk['file']}, byte {chunk['offset']})"
        if chunk["file"] not in files:
            _fail(at, "the file is not listed in the manifest's files")
        if not (count > 0 and first <= rows and count <= rows - first):
            _fail(at, f"rows [{first}, {first + count}) are outside the tensor's {rows} rows")
        if chunk["length"] != count * row_bytes:
            _fail(at, f"length {chunk['length']} disagrees with {count} rows of {row_bytes} bytes")
        if chunk["offset"] + chunk["length"] > files[chunk["file"]]:
            _fail(at, f"the range ends past the end of {chunk['file']} ({files[chunk['file']]} bytes)")
        if len(chunk["checksums"]) != -(-chunk["length"] // chunk["block_bytes"]):
            _fail(at, f"{len(chunk['checksums'])} checksums for {chunk['length']} bytes in blocks of "
                      f"{chunk['block_bytes']}")
        if first < covered:
            _fail(where, f"entry {name!r} rows [{first}, {covered}) are covered twice")
        if first > covered:
            _fail(where, f"entry {name!r} rows [{covered}, {first}) are in no chunk")
        covered = first + count
        if chunk["length"]:
            ranges.append((chunk["file"], chunk["offset"], chunk["length"], name))
    if covered != rows:
        _fail(where, f"entry {name!r} rows [{covered}, {rows}) are in no chunk")


def check_manifest(manifest, where):
    _members(manifest, ("format", "format_version", "world_size", "files", "entries", "manifest_checksum"), where)
    if _member(manifest, "format", where) != "ember-checkpoint":
        _fail(where, f"not an ember checkpoint manifest (format is {json.dumps(manifest['format'])[:40]})")
    version = _uint(_member(manifest, "format_version", where), 2**31 - 1, f"{where}: format_version")
    if version != 1:
        _fail(where, f"format version {version} is not supported (this reader reads version 1)")
    world_size = _uint(_member(manifest, "world_size", where), MAX_WORLD_SIZE, f"{where}: world_size")
    if world_size < 1:
        _fail(where, f"world_size {world_size} must be at least 1")
    files, ranks = {}, set()
    for i, data_file in enumerate(_array(_member(manifest, "files", where), f"{where}: files")):
        at = f"{where}: files[{i}]"
        _members(data_file, ("name", "size", "rank"), at)
        name = _string(_member(data_file, "name", at), 255, f"{at}: name")
        _check_file_name(name, at)
        rank = _uint(_member(data_file, "rank", at), world_size - 1, f"{at}: rank")
        if name in files or rank in ranks:
            _fail(at, f"file {name} or rank {rank} is listed twice")
        files[name] = _uint(_member(data_file, "size", at), INT64_MAX, f"{at}: size")
        ranks.add(rank)
    entries = _array(_member(manifest, "entries", where), f"{where}: entries")
    for i, entry in enumerate(entries):
        _check_entry(entry, i, where)
    entries.sort(key=lambda entry: entry["name"])
    ranges = []
    for i, entry in enumerate(entries):
        if i and entries[i - 1]["name"] == entry["name"]:
            _fail(where, f"entry name {entry['name']!r} appears twice")
        if entry["kind"] == "tensor":
            _check_tensor(entry, files, ranges, where)
    ranges.sort()
    for previous, current in zip(ranges, ranges[1:]):
        if previous[0] == current[0] and previous[1] + previous[2] > current[1]:
            _fail(where, f"file {current[0]} bytes [{current[1]}, {current[1] + current[2]}) of entry "
                         f"{current[3]!r} overlap bytes of entry {previous[3]!r}")
    return files


def parse(text, where):
    """json.loads refusing duplicate keys, NaN/Infinity literals and deep nesting, as the C++ parser does."""
    def unique(pairs):
        obj = {}
        for key, value in pairs:
            if key in obj:
                _fail(where, f'duplicate key "{key}"')
            obj[key] = value
        return obj

    def no_constant(name):
        _fail(where, f"not valid JSON: {name} is not a JSON number")

    try:
        return json.loads(text, object_pairs_hook=unique, parse_constant=no_constant)
    except json.JSONDecodeError as error:
        _fail(where, f"not valid JSON: {error}")
    except RecursionError:  # Python's parser stops at its recursion limit; less nesting fails the type checks
        _fail(where, f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
