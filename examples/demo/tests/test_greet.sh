#!/bin/sh
# T1: a plain greeting.
out=$(sh src/greet.sh Ada) || { echo "FAIL: src/greet.sh Ada exited $?"; exit 1; }
if [ "$out" != "Hello, Ada!" ]; then
  echo "FAIL: expected 'Hello, Ada!', got '$out'"
  exit 1
fi
echo "ok: plain greeting"
