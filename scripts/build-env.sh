# Sourced by scripts/test and scripts/package: `build_env` is the environment their
# builds run in, the same for both so the package reuses the tests' build.
#   - With AGENTLOOP_TEST_LINT set, the build goes through clippy's driver with
#     `-D warnings` (cargo clippy's own way of passing lint flags), so one build serves
#     the lints, the tests and the package.
#   - With mold on the PATH, binaries are linked by mold: the test binaries' links are
#     most of an incremental build's time with the system linker (a change to the
#     integration tests relinked in 3.4 s against 14 s here). Without it, the system
#     linker links as before.
#   - Executables are linked without position independence (scripts/no-pie-gcc): each
#     start of a test build's agentloop then skips 194,000 relocations (10 ms of CPU
#     to 2.7 ms), and the tests start it thousands of times. Release builds
#     (`cargo install`, `scripts/package --release`) do not use it.
#     A linker of your own (`CARGO_TARGET_<HOST>_LINKER`) is left as it is.
host=$(rustc -vV | sed -n 's/^host: //p' | tr 'a-z-' 'A-Z_')
build_env=(env)
linker_var="CARGO_TARGET_${host}_LINKER"
if [ -z "${!linker_var:-}" ]; then
  build_env+=("$linker_var=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/no-pie-gcc")
fi
if [ -n "${AGENTLOOP_TEST_LINT:-}" ]; then
  driver="$(rustc --print sysroot)/bin/clippy-driver"
  if [ ! -x "$driver" ]; then
    echo "AGENTLOOP_TEST_LINT needs clippy: rustup component add clippy" >&2
    exit 2
  fi
  build_env+=(RUSTC_WORKSPACE_WRAPPER="$driver" CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__")
fi
if command -v mold >/dev/null 2>&1; then
  build_env+=("CARGO_TARGET_${host}_RUSTFLAGS=-C link-arg=-fuse-ld=mold")
fi
