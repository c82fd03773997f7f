#!/bin/sh
# T1: a plain greeting.
. tests/lib.sh
suite greet
out=$(sh src/greet.sh Ada)
code=$?
if [ "$code" -ne 0 ]; then
  fail "plain greeting" "src/greet.sh Ada exited $code"
elif [ "$out" != "Hello, Ada!" ]; then
  fail "plain greeting" "expected 'Hello, Ada!', got '$out'"
else
  pass "plain greeting"
fi
finish
