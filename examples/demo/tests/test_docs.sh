#!/bin/sh
# T3: README.md documents both forms.
[ -f README.md ] || { echo "FAIL: README.md is missing"; exit 1; }
grep -q '^## Usage' README.md || { echo "FAIL: README.md has no '## Usage' section"; exit 1; }
grep -q -- '--shout' README.md || { echo "FAIL: the usage section does not mention --shout"; exit 1; }
echo "ok: usage documented"
