#!/bin/sh
# T2: --shout upper-cases the whole greeting.
. tests/lib.sh
suite shout
out=$(sh src/greet.sh --shout Ada)
code=$?
if [ "$code" -ne 0 ]; then
  fail "shouted greeting" "src/greet.sh --shout Ada exited $code"
elif [ "$out" != "HELLO, ADA!" ]; then
  fail "shouted greeting" "expected 'HELLO, ADA!', got '$out'"
else
  pass "shouted greeting"
fi
finish
