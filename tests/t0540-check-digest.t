#!/bin/sh
test_description='contrib/check.sh'"'"'s closing digest (ddp_tap_digest in contrib/deps.sh) names what failed in a real prove log'
. "$(dirname "$0")/test-lib.sh"

# No cluster: prove runs three tiny TAP scripts of different name lengths,
# as contrib/check.sh runs the suite (-v --timer), and the digest must pick
# the failed one out of prove's padded "Test Summary Report".  Nothing of
# the inner runs is printed (quiet greps): this test's own verbose output
# is part of the suite's log that the digest reads at the end of CI.

. "$DDP_SRC_DIR/contrib/deps.sh"

command -v prove >/dev/null || skip_all='prove not installed' test_done

tap () {
	printf '#!/bin/sh\necho 1..2\necho "ok 1 - first"\n' >"$1" &&
	printf 'echo "# the output before %s fails"\n' "$1" >>"$1" &&
	printf 'echo "%s 2 - second of %s"\n' "$2" "$1" >>"$1" &&
	chmod +x "$1"
}

test_expect_success 'a prove log with one failure among padded names' '
	tap a.t "not ok" &&
	tap a-much-longer-name-than-the-others.t ok &&
	tap b.t ok &&
	test_must_fail prove -v --timer ./a.t ./a-much-longer-name-than-the-others.t ./b.t \
		:: -v >fail.log 2>&1 &&
	grep -q "^\./a\.t  *(Wstat:" fail.log
'

test_expect_success 'the digest names the failed file and shows its "not ok" with what came before' '
	ddp_tap_digest fail.log >digest &&
	grep -qx "== digest of fail.log: what failed" digest &&
	grep -qx "== digest: ./a.t" digest &&
	grep -qx "not ok 2 - second of a.t" digest &&
	grep -qx "# the output before a.t fails" digest &&
	! grep -q "second of b.t" digest &&
	! grep -q "== digest: ./a-much" digest
'

test_expect_success 'a passing log gives no digest' '
	prove -v --timer ./b.t ./a-much-longer-name-than-the-others.t >pass.log 2>&1 &&
	ddp_tap_digest pass.log >digest &&
	test_must_be_empty digest
'

test_expect_success 'only the last report counts: a log that holds another prove'"'"'s output' '
	{ cat fail.log && cat pass.log; } >nested.log &&
	ddp_tap_digest nested.log >digest &&
	test_must_be_empty digest &&
	{ cat pass.log && cat fail.log; } >nested.log &&
	ddp_tap_digest nested.log >digest &&
	grep -qx "== digest: ./a.t" digest
'

test_expect_success 'the digest is bounded by its MAX_LINES, and a cut one is no error under pipefail' '
	bash -c "set -eu -o pipefail; . \"\$DDP_SRC_DIR/contrib/deps.sh\"; ddp_tap_digest fail.log 3" >digest &&
	test "$(wc -l <digest)" = 3
'

test_done
