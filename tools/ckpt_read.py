#!/usr/bin/env python3
"""Reads ember checkpoints with the Python standard library only (see ckpt/FORMAT.md).

Proof that a checkpoint is readable without the process, or the library, that wrote it.

    tools/ckpt_read.py DIR                 list the entries
    tools/ckpt_read.py DIR ENTRY           print one entry as JSON: {"name", "dtype", "shape", "data"}
    tools/ckpt_read.py DIR ENTRY --nested  ... with "data" nested by shape

Exit status: 0 read, 1 the checkpoint or entry cannot be read (the reason on stderr), 2 bad
arguments.

As a module: read_manifest(dir) -> dict, read_entry(dir, name) -> (dtype, shape, flat list) for a
tensor or (type, value) for a value. The manifest passes the C++ reader's structural rules
(tools/ckpt_manifest.py) before any data is read; the manifest and data files are opened without
following symbolic links and refused unless they are regular files (a FIFO is never waited on), and
bool bytes other than 0 or 1 are refused. Checksums (XXH3-64) are not
verified here: the standard library has no XXH3; `ember-ckpt verify DIR` checks them.
"""
import argparse
import array
import json
import os
import stat
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # ckpt_manifest.py, also when imported
from ckpt_manifest import DTYPES, MAX_MANIFEST_BYTES, check_manifest, chunk_rows, float64, parse  # noqa: E402

MANIFEST = "manifest.json"
CHECKSUM_PREFIX = ',\n"manifest_checksum": "'
CHECKSUM_SUFFIX = '"\n}\n'


class NoEntry(KeyError):
    """read_entry's error for a name the manifest does not list."""

    def __str__(self):
        return self.args[0]


def _open_regular(path):
    """`path` opened for reading without following a symbolic link, refused unless it is a regular file.
    O_NONBLOCK: opening a FIFO would otherwise wait for a writer forever; reads block again after the check."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{path} is not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _open_data(directory, name, size):
    """A data file, a regular file not reached through a symbolic link, whose size is the manifest's."""
    handle = _open_regular(os.path.join(directory, name))
    actual = os.fstat(handle.fileno()).st_size
    if actual != size:
        handle.close()
        raise ValueError(f"{directory}: data file {name} is {actual} bytes but the manifest says {size} "
                         "(truncated, extended or replaced)")
    return handle


def read_manifest(directory):
    path = os.path.join(directory, MANIFEST)
    with _open_regular(path) as handle:
        raw = handle.read(MAX_MANIFEST_BYTES + 1)
    if len(raw) > MAX_MANIFEST_BYTES:
        raise ValueError(f"{path}: the manifest is larger than the limit of {MAX_MANIFEST_BYTES} bytes")
    text = raw.decode("utf-8")  # a UnicodeDecodeError is a ValueError
    trailer = len(CHECKSUM_PREFIX) + 16 + len(CHECKSUM_SUFFIX)
    if not (text.endswith(CHECKSUM_SUFFIX) and text[-trailer:].startswith(CHECKSUM_PREFIX)):
        raise ValueError(f"{directory}: manifest does not end with its checksum member")
    manifest = parse(text, path)
    for name, size in check_manifest(manifest, path).items():
        _open_data(directory, name, size).close()
    return manifest


def _decode(dtype, raw):
    size, code = DTYPES[dtype]
    if code is not None:
        values = array.array(code)
        if values.itemsize != size:
            raise ValueError(f"this platform's array '{code}' is not {size} bytes")
        values.frombytes(raw)
        if sys.byteorder == "big":  # the files are little-endian
            values.byteswap()
        return [bool(v) for v in values] if dtype == "bool" else values.tolist()
    halves = struct.unpack(f"<{len(raw) // 2}H", raw)
    if dtype == "float16":
        return [struct.unpack("<e", struct.pack("<H", h))[0] for h in halves]
    return [struct.unpack("<f", struct.pack("<I", h << 16))[0] for h in halves]  # bfloat16


def _value(kind, value):
    if kind == "float64":
        return float64(value, kind)
    if kind == "float64_list":
        return [float64(v, kind) for v in value]
    return value


def read_entry(directory, name, manifest=None):
    manifest = manifest or read_manifest(directory)
    sizes = {data_file["name"]: data_file["size"] for data_file in manifest["files"]}
    for entry in manifest["entries"]:
        if entry["name"] != name:
            continue
        if entry["kind"] == "value":
            return entry["type"], _value(entry["type"], entry["value"])
        dtype, shape = entry["dtype"], entry["shape"]
        row_elements = 1
        for dim in shape[1:]:
            row_elements *= dim
        flat = [None] * (row_elements * (shape[0] if shape else 1))  # checked: the chunks hold every row
        for chunk in entry["chunks"]:
            with _open_data(directory, chunk["file"], sizes[chunk["file"]]) as handle:
                handle.seek(chunk["offset"])
                raw = handle.read(chunk["length"])
            if len(raw) != chunk["length"]:
                raise ValueError(f"{directory}: {chunk['file']} is truncated (entry {name!r})")
            first = chunk_rows(chunk, shape)[0] * row_elements
            bad = len(raw) - len(raw.lstrip(b"\x00\x01")) if dtype == "bool" else len(raw)
            if bad < len(raw):
                raise ValueError(f"{directory}: bool entry {name!r} holds byte {raw[bad]} at element {first + bad} "
                                 f"(file {chunk['file']} byte {chunk['offset'] + bad}); a bool element is 0 or 1")
            values = _decode(dtype, raw)
            flat[first:first + len(values)] = values
        return dtype, shape, flat
    raise NoEntry(f"{directory}: no entry {name!r}")


def nest(flat, shape):
    if len(shape) <= 1:
        return flat if shape else flat[0]
    step = len(flat) // shape[0] if shape[0] else 0
    return [nest(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def _json_number(value):  # JSON has no NaN or infinity; ember-ckpt spells them the same way
    if isinstance(value, float) and value != value:
        return "nan"
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return "inf" if value > 0 else "-inf"
    return value


def _parse_arguments(argv):
    parser = argparse.ArgumentParser(prog="ckpt_read.py", description=__doc__.strip().split("\n\n")[0],
                                     epilog="exit status: 0 read, 1 cannot read the checkpoint or entry, "
                                            "2 bad arguments")
    parser.add_argument("directory", metavar="DIR", help="checkpoint directory (holds manifest.json)")
    parser.add_argument("entry", metavar="ENTRY", nargs="?", help="print this entry as JSON")
    parser.add_argument("--nested", action="store_true", help="with ENTRY: nest \"data\" by the shape")
    arguments = parser.parse_args(argv)
    if arguments.nested and arguments.entry is None:
        parser.error("--nested needs an ENTRY")
    return arguments


def _print_listing(directory, manifest):
    print(f"{directory}: saved by {manifest['world_size']} ranks")
    for entry in manifest["entries"]:
        if entry["kind"] == "value":
            print(f"  {entry['name']}  {entry['type']} = {_value(entry['type'], entry['value'])!r}")
        else:
            print(f"  {entry['name']}  {entry['dtype']} {entry['shape']} {entry['sharding']}"
                  f"  {len(entry['chunks'])} chunks")


def _print_entry(directory, name, manifest, nested):
    result = read_entry(directory, name, manifest)
    if len(result) == 2:
        kind, value = result
        value = [_json_number(v) for v in value] if isinstance(value, list) else _json_number(value)
        print(json.dumps({"name": name, "type": kind, "value": value}))
        return
    dtype, shape, flat = result
    data = [_json_number(v) for v in flat]
    if nested:
        data = nest(data, shape)
    print(json.dumps({"name": name, "dtype": dtype, "shape": shape, "data": data}))


def main(argv):
    arguments = _parse_arguments(argv[1:])
    try:
        manifest = read_manifest(arguments.directory)
        if arguments.entry is None:
            _print_listing(arguments.directory, manifest)
        else:
            _print_entry(arguments.directory, arguments.entry, manifest, arguments.nested)
    except NoEntry as error:
        print(f"ckpt_read.py: {error}", file=sys.stderr)
        return 1
    except OSError as error:  # a missing directory or data file, a permission
        print(f"ckpt_read.py: {error.filename or arguments.directory}: {error.strerror or error}", file=sys.stderr)
        return 1
    except ValueError as error:  # this module's checks (they name the directory) and malformed JSON
        text = str(error)
        print(f"ckpt_read.py: {text if arguments.directory in text else arguments.directory + ': ' + text}",
              file=sys.stderr)
        return 1
    except (KeyError, TypeError, IndexError, struct.error) as error:  # a manifest missing members, or odd
        print(f"ckpt_read.py: {arguments.directory}: malformed manifest ({type(error).__name__}: {error})",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
