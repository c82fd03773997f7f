#!/bin/sh
# The example agent: a deterministic stand-in for a coding agent, used by
# `agentloop demo` and the tests. It reads its prompt on stdin, works on the task the
# prompt names, and reports back with the signal protocol.
#
# Like real agents it makes a realistic mistake: on its first attempt at T2 it forgets
# to upper-case the name, yet claims TASK_COMPLETE. agentloop's own verification catches
# it, and the next prompt carries the failure digest, which this agent reads and fixes.
set -eu

prompt=$(cat)
task=$(printf '%s\n' "$prompt" | sed -n 's/^## Your task: \([A-Za-z0-9_-]*\) .*/\1/p' | head -n 1)
retry=no
case "$prompt" in
*"## Last attempt failed"*) retry=yes ;;
esac

mkdir -p src
case "$task" in
T1)
  cat > src/greet.sh <<'SH'
#!/bin/sh
# Usage: greet.sh NAME
printf 'Hello, %s!\n' "$1"
SH
  echo "Created src/greet.sh; it prints the greeting for its first argument."
  echo "LEARNING: the tests are plain sh scripts in tests/; run them with sh"
  echo "TASK_COMPLETE"
  ;;
T2)
  if [ "$retry" = no ]; then
    # The mistake: only the greeting word is upper-cased.
    cat > src/greet.sh <<'SH'
#!/bin/sh
# Usage: greet.sh [--shout] NAME
if [ "$1" = "--shout" ]; then
  printf 'HELLO, %s!\n' "$2"
else
  printf 'Hello, %s!\n' "$1"
fi
SH
    echo "Added --shout. I am confident the tests pass."
    echo "TASK_COMPLETE"
  else
    cat > src/greet.sh <<'SH'
#!/bin/sh
# Usage: greet.sh [--shout] NAME
if [ "$1" = "--shout" ]; then
  printf 'Hello, %s!\n' "$2" | tr '[:lower:]' '[:upper:]'
else
  printf 'Hello, %s!\n' "$1"
fi
SH
    echo "The failure shows the name was not upper-cased; the whole line goes through tr now."
    echo "LEARNING: upper-case the whole greeting with tr, not just the word"
    echo "TASK_COMPLETE"
  fi
  ;;
T3)
  cat > README.md <<'MD'
# Greeter

## Usage

    sh src/greet.sh Ada            # Hello, Ada!
    sh src/greet.sh --shout Ada    # HELLO, ADA!
MD
  echo "Documented both forms in README.md."
  echo
  echo "TASK_COMPLETE"
  ;;
*)
  echo "BLOCKED: I only know tasks T1, T2 and T3 of the greeter; what is task '$task'?"
  ;;
esac
