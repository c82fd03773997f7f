#!/bin/sh
# T3: README.md documents both forms.
. tests/lib.sh
suite docs
if [ ! -f README.md ]; then
  fail "usage documented" "README.md is missing"
elif ! grep -q '^## Usage' README.md; then
  fail "usage documented" "README.md has no '## Usage' section"
elif ! grep -q -- '--shout' README.md; then
  fail "usage documented" "the usage section does not mention --shout"
else
  pass "usage documented"
fi
finish
