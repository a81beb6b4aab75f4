#!/usr/bin/env python3
"""ctest: tools/ckpt_read.py (stdlib only) reads every entry of a checkpoint exactly as ember does,
and refuses, with a message and exit status 1 and never a traceback, what the C++ reader refuses.

    test_ckpt_read.py HELPER EMBER_CKPT READER
HELPER (ckpt_crash_helper) writes the tests' awkward 3-rank checkpoint; EMBER_CKPT prints each
entry through the C++ reader (`inspect --entry`); READER is tools/ckpt_read.py.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

TRAILER = ',\n"manifest_checksum": "'


def hostile(directory, name, edit_manifest=None, edit_text=None, edit_files=None):
    """A copy of the checkpoint with its manifest or files edited (ckpt_read.py cannot check the
    seal's XXH3, so a copy keeps any 16 hex digits)."""
    copy = f"{directory}-{name}"
    shutil.copytree(directory, copy)
    path = os.path.join(copy, "manifest.json")
    with open(path) as handle:
        manifest = json.load(handle)
    del manifest["manifest_checksum"]
    if edit_manifest:
        edit_manifest(manifest, {entry["name"]: entry for entry in manifest["entries"]})
    body = json.dumps(manifest)[:-1]
    with open(path, "w") as handle:
        handle.write((edit_text(body) if edit_text else body) + TRAILER + "0" * 16 + '"\n}\n')
    if edit_files:
        edit_files(copy, manifest)
    return copy


def symlink_data_file(copy, manifest):
    os.rename(os.path.join(copy, "rank_00001.bin"), os.path.join(copy, "elsewhere"))
    os.symlink("elsewhere", os.path.join(copy, "rank_00001.bin"))


def fifo_data_file(copy, manifest):  # opening a FIFO for reading used to wait for a writer forever
    os.remove(os.path.join(copy, "rank_00001.bin"))
    os.mkfifo(os.path.join(copy, "rank_00001.bin"))


def fifo_manifest(directory):
    copy = f"{directory}-fifo_manifest"
    shutil.copytree(directory, copy)
    os.remove(os.path.join(copy, "manifest.json"))
    os.mkfifo(os.path.join(copy, "manifest.json"))
    return copy


def flip_to_2(chunk):  # the second element of a bool chunk becomes 2
    def edit(copy, manifest):
        with open(os.path.join(copy, chunk["file"]), "r+b") as handle:
            handle.seek(chunk["offset"] + 1)
            handle.write(b"\x02")
    return edit


def refuses(reader, case, directory, entry, pattern):
    try:
        result = subprocess.run([sys.executable, reader, directory, entry], capture_output=True, text=True,
                                timeout=60)
    except subprocess.TimeoutExpired:
        print(f"{case}: ckpt_read.py {directory} {entry}: still running after 60 s (expected exit 1 and /{pattern}/)")
        return False
    if result.returncode != 1 or "Traceback" in result.stderr or not re.search(pattern, result.stderr):
        print(f"{case}: ckpt_read.py {directory} {entry}: exit {result.returncode}, expected 1 and /{pattern}/\n"
              f"  stdout: {result.stdout[:300]}\n  stderr: {result.stderr[-600:]}")
        return False
    return True


def check_hostile(directory, reader):
    """The C++ reader's rules (ckpt/FORMAT.md) on manifests and files it refuses."""
    def shape(name, dims):
        return lambda manifest, entries: entries[name].update(shape=dims)

    def value(name, text):
        return lambda manifest, entries: entries[name].update(value=text)

    with open(os.path.join(directory, "manifest.json")) as handle:
        flags = next(e for e in json.load(handle)["entries"] if e["name"] == "layer.flags")["chunks"][0]
    cases = [  # (name, hostile checkpoint, entry to read, the message expected)
        ("rows_past_shape", hostile(directory, "rows", shape("layer.prime", [12, 7])), "layer.prime",
         r"entry 'layer.prime' chunk 2 \(file rank_00002.bin, byte \d+\): rows \[9, 13\) are outside the "
         r"tensor's 12 rows$"),
        ("huge_shape", hostile(directory, "huge", shape("layer.bf16", [2**61])), "layer.bf16",
         r"entry 'layer.bf16' rows \[31, 2305843009213693952\) are in no chunk$"),
        ("overflowing_shape", hostile(directory, "overflow", shape("layer.bf16", [2**62])), "step",
         r"entry 'layer.bf16' shape \[4611686018427387904\] of bfloat16 is larger than 2\^62 bytes$"),
        ("deep_nesting", hostile(directory, "deep", value("step", "DEEP"),
                                 lambda body: body.replace('"DEEP"', "[" * 100000 + "]" * 100000)), "step",
         r"manifest.json: JSON nested deeper than 8 levels$"),
        ("float_overflow", hostile(directory, "float", value("lr", "0x1p+99999")), "lr",
         r"entry 'lr': value: \"0x1p\+99999\" is not a hex float such as 0x1.8p\+1$"),
        ("nan_literal", hostile(directory, "nan", edit_text=lambda body: body.replace('"value": true', '"value": NaN')),
         "warm", r"not valid JSON: NaN is not a JSON number$"),
        ("symlinked_data", hostile(directory, "link", edit_files=symlink_data_file), "layer.prime",
         r"-link/rank_00001.bin: Too many levels of symbolic links$"),
        ("fifo_data", hostile(directory, "fifo", edit_files=fifo_data_file), "layer.prime",
         r"-fifo/rank_00001.bin is not a regular file$"),
        ("fifo_manifest", fifo_manifest(directory), "layer.prime",
         r"-fifo_manifest/manifest.json is not a regular file$"),
        ("bool_byte", hostile(directory, "bool", edit_files=flip_to_2(flags)), "layer.flags",
         rf"bool entry 'layer.flags' holds byte 2 at element {flags['start'][0] + 1} \(file {flags['file']} "
         rf"byte {flags['offset'] + 1}\); a bool element is 0 or 1$"),
    ]
    return all([refuses(reader, *case) for case in cases])  # a list: every case runs and reports


# The float64 spellings tests/ckpt/test_manifest.cpp gives the C++ reader: both must agree.
FLOATS_TAKEN = {"0x1p-1080": 0.0, "-0x1p-1080": -0.0, "0x1p-1075": 0.0, "0x1.8p-1075": 2.0**-1074,
                "0x1p-1074": 2.0**-1074, "0x1.00000000000008p0": 1.0, "0x1.00000000000018p0": 1.0 + 2.0**-51,
                "0x1.p1": 2.0, "0xAp0": 10.0, "0x1P+1": 2.0, "-0x1.8p1": -3.0}
FLOATS_REFUSED = ["0x-1.0624dd2f1a9fcp-10", "-0x-1p0", "0xinf", "0xnan", "0x+1p0", "0x1p", "0x.p1", "0x",
                  "0x1p+99999", "0x1.fffffffffffff8p1023", "0x1p1024", "0X1p0", " 0x1p0", "0x1p0 ", "0x1_0p0",
                  "+0x1p0"]


def check_float_spellings(reader):
    sys.path.insert(0, os.path.dirname(reader))
    from ckpt_manifest import float64  # noqa: E402
    good = True
    for text, expected in FLOATS_TAKEN.items():
        try:
            value = float64(text, "w")
        except ValueError as error:
            value = error
        if not (isinstance(value, float) and value.hex() == expected.hex()):
            print(f"float64 {text!r}: got {value!r}, expected {expected.hex()}")
            good = False
    for text in FLOATS_REFUSED:
        try:
            print(f"float64 {text!r}: took it as {float64(text, 'w')!r}, expected a refusal")
            good = False
        except ValueError:
            pass
    return good


def run(*command):
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


def main(helper, ember_ckpt, reader):
    with tempfile.TemporaryDirectory(prefix="ember-ckpt-read-") as root:
        run(helper, root, "4")
        directory = f"{root}/step_000000004"
        names = [entry["name"] for entry in json.loads(run(ember_ckpt, "inspect", directory, "--json"))["entries"]]
        assert len(names) >= 15, names
        compared = 0
        for name in names:
            expected = json.loads(run(ember_ckpt, "inspect", directory, "--entry", name))
            actual = json.loads(run(sys.executable, reader, directory, name))
            if actual != expected:
                print(f"entry {name}: python read {str(actual)[:300]}\n  ember read {str(expected)[:300]}")
                return 1
            compared += 1
        nested = json.loads(run(sys.executable, reader, directory, "layer.three_d", "--nested"))
        assert nested["shape"] == [11, 2, 3] and len(nested["data"]) == 11 and len(nested["data"][0][0]) == 3
        print(f"ckpt_read.py matched ember-ckpt on all {compared} entries")
        if not check_hostile(directory, reader):
            return 1
        if not check_float_spellings(reader):
            return 1
        print("ckpt_read.py refused every hostile checkpoint")
        return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
