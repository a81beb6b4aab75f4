#!/usr/bin/env python3
"""ctest: tools/ckpt_read.py (stdlib only) reads every entry of a checkpoint exactly as ember does.

    test_ckpt_read.py HELPER EMBER_CKPT READER
HELPER (ckpt_crash_helper) writes the tests' awkward 3-rank checkpoint; EMBER_CKPT prints each
entry through the C++ reader (`inspect --entry`); READER is tools/ckpt_read.py.
"""
import json
import subprocess
import sys
import tempfile


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
        return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
