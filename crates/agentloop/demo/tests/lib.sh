# A tiny test runner for sh. Each `pass` or `fail` is one test case; `finish` exits 1
# if any failed. With $AGENTLOOP_TEST_REPORT set (agentloop sets it for every check),
# the results also go there as JUnit XML, and agentloop judges the check test by test
# from them: any check can give per-test evidence this way.
cases=
failed=0
suite() { suite=$1; }
xml() { printf '%s' "$1" | sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g' -e 's/"/\&quot;/g'; }
# pass NAME [SAY]
pass() {
  echo "ok: ${2:-$1}"
  cases="$cases<testcase classname=\"$suite\" name=\"$(xml "$1")\"/>"
}
# fail NAME WHY
fail() {
  echo "FAIL: $2"
  failed=$((failed + 1))
  cases="$cases<testcase classname=\"$suite\" name=\"$(xml "$1")\"><failure message=\"$(xml "$2")\"/></testcase>"
}
finish() {
  if [ -n "${AGENTLOOP_TEST_REPORT:-}" ]; then
    printf '<testsuites><testsuite name="%s">%s</testsuite></testsuites>\n' "$suite" "$cases" >"$AGENTLOOP_TEST_REPORT"
  fi
  [ "$failed" -eq 0 ] || exit 1
  exit 0
}
