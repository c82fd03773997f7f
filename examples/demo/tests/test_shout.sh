#!/bin/sh
# T2: --shout upper-cases the whole greeting.
out=$(sh src/greet.sh --shout Ada) || { echo "FAIL: src/greet.sh --shout Ada exited $?"; exit 1; }
if [ "$out" != "HELLO, ADA!" ]; then
  echo "FAIL: expected 'HELLO, ADA!', got '$out'"
  exit 1
fi
echo "ok: shouted greeting"
