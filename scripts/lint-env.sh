# Sourced by scripts/test and scripts/package: with AGENTLOOP_TEST_LINT set, `lint`
# is the environment that builds through clippy's driver with `-D warnings` (cargo
# clippy's own way of passing lint flags), so one build serves the lints, the tests
# and the package; else it is empty.
lint=()
if [ -n "${AGENTLOOP_TEST_LINT:-}" ]; then
  driver="$(rustc --print sysroot)/bin/clippy-driver"
  if [ ! -x "$driver" ]; then
    echo "AGENTLOOP_TEST_LINT needs clippy: rustup component add clippy" >&2
    exit 2
  fi
  lint=(env RUSTC_WORKSPACE_WRAPPER="$driver" CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__")
fi
