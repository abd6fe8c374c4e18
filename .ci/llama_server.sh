#!/usr/bin/env bash
# Build-or-reuse llama.cpp's server (`llama-server`) for the end-to-end tests (issue 21), and print its path.
#
# The complete llama.cpp source ships inside the llama-cpp-python source distribution (vendor/llama.cpp), so pip
# fetches it from the package index (version pinned; pip's download cache is reused). Only the server target is
# built: CPU only (no CUDA/Metal/Vulkan/BLAS), no OpenSSL, no web UI (neither npm nor the prebuilt download),
# static libraries so the one binary is all there is to keep, and GGML_NATIVE=OFF (AVX2/FMA) so a cached binary
# also runs on another x86-64 CI host. The binary is kept in
#   ${AUTOPARSER_LLAMA_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/autoparser-ci/llama-server}/bin/llama-server
# and rebuilt only when it is missing or `llama-server --version` fails (then the sources and the build tree are
# thrown away: only the binary and a stamp naming the version are kept, a few MB).
# Cold: about 14 minutes on 2 cores (816 s wall, 7.7 min CPU, on a shared machine); warm: milliseconds.
#
# Usage: .ci/llama_server.sh [PYTHON]   (PYTHON runs `-m pip download`; default python3). Progress goes to stderr,
# the binary's path to stdout.
set -euo pipefail
python="${1:-python3}"
spec="${AUTOPARSER_LLAMA_CPP_PYTHON_SPEC:-llama-cpp-python==0.3.36}"
dir="${AUTOPARSER_LLAMA_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/autoparser-ci/llama-server}"
bin="$dir/bin/llama-server"
stamp="$dir/bin/SOURCE"
start=$SECONDS

if [[ -x "$bin" && "$(cat "$stamp" 2> /dev/null)" == "$spec" ]] && "$bin" --version > /dev/null 2>&1; then
    echo "llama-server cached ($spec) in $((SECONDS - start)) s: $bin" >&2
    echo "$bin"
    exit 0
fi

echo "building llama-server from $spec into $dir" >&2
rm -rf "$dir/bin"
mkdir -p "$dir/bin"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$python" -m pip download --quiet --no-deps --no-binary :all: "$spec" -d "$work/sdist" >&2
tar -xzf "$work"/sdist/*.tar.gz -C "$work"
src="$(echo "$work"/llama_cpp_python-*/vendor/llama.cpp)"
[[ -f "$src/tools/server/CMakeLists.txt" ]] || { echo "no llama.cpp server sources in $spec" >&2; exit 1; }
generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
cmake -S "$src" -B "$work/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF -DGGML_CCACHE=OFF \
    -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF -DGGML_BLAS=OFF \
    -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON > "$work/configure.log" 2>&1 \
    || { cat "$work/configure.log" >&2; exit 1; }
cmake --build "$work/build" --config Release --target llama-server -j "$(nproc 2> /dev/null || echo 2)" \
    > "$work/build.log" 2>&1 || { tail -n 60 "$work/build.log" >&2; exit 1; }
cp "$work/build/bin/llama-server" "$bin"
"$bin" --version >&2
echo "$spec" > "$stamp"
echo "llama-server built in $((SECONDS - start)) s: $bin" >&2
echo "$bin"
