#!/usr/bin/env bash
# Prepares, on a machine with network access, the build dependencies tools/gpu_check.sh needs on a
# GPU machine that has none: the Debian packages ember builds with (headers, CMake package files,
# the fmt and xxhash shared libraries) unpacked into .deps/root, which gpu_check.sh puts first on
# CMAKE_PREFIX_PATH. Unpacked with dpkg -x (nothing is installed); .deps is git-ignored and travels
# to the GPU machine as a carried folder.
#
#   tools/stage_gpu_deps.sh            # then: device run with carry [".deps"] of tools/gpu_check.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
deps="$root/.deps"
packages=(
  libeigen3-dev doctest-dev nlohmann-json3-dev libcli11-dev
  libfmt-dev libfmt9 libxxhash-dev libxxhash0 zlib1g-dev zlib1g
  libgomp1  # OpenMP runtime of libember: present wherever gcc is, not on every image
)
rm -rf "$deps"
mkdir -p "$deps/debs" "$deps/root"
(cd "$deps/debs" && apt-get download "${packages[@]}" >/dev/null)
for deb in "$deps"/debs/*.deb; do dpkg -x "$deb" "$deps/root"; done
rm -rf "$deps/debs" "$deps/root/usr/share/doc" "$deps/root/usr/share/man"
# Absolute links (libz.so -> /lib/...) would point into the GPU machine's own system: re-aim them
# inside the staging root, relative, so they survive the copy.
while IFS= read -r link; do
  target=$(readlink "$link")
  [[ $target == /* ]] || continue
  ln -sfn "$(realpath --relative-to="$(dirname "$link")" -m "$deps/root$target")" "$link"
done < <(find "$deps/root" -type l)
# The one data file the convergence test reads (scikit-learn's digits), for machines whose
# scikit-learn lives elsewhere or is missing.
digits=/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz
[[ -f $digits ]] && cp "$digits" "$deps/digits.csv.gz"
echo "staged into $deps: $(du -sh "$deps" | cut -f1)"
