#!/bin/sh
test_description='the library'"'"'s source keeps its shape: no file of libjob/ over 1000 lines; in libjob/host every file says what it owns and includes no header of a layer above its own'
. "$(dirname "$0")/test-lib.sh"

# No cluster, no build: this reads the source tree (well under a second).
# The layers of the host backend are drawn in doc/host-backend.md; the
# calls between its objects are checked by libjob/host/test/deps.t.

SRC=$DDP_SRC_DIR/libjob
HOST=$SRC/host

# layer FILE: the layer of a file of libjob/host (bottom 0), or nothing
# when it has none (a new file takes its place here and in the doc).
layer () {
	case $1 in
	host_core.h|record.h|record.c|schedule.h|schedule.c|gate.h|gate.c|trail.h|trail.c) echo 0 ;;
	transport.h|tcp.h|shm.c|tcp.c|mesh.c|flood.c) echo 1 ;;
	fault.h|fault.c) echo 2 ;;
	algo.h|algo.c|node.h|node.c) echo 3 ;;
	host.h|coll.c|cross.c|host.c) echo 4 ;;
	esac
}

test_expect_success 'no .c or .h file of libjob/ is over 1000 lines' '
	find "$SRC" -name "*.[ch]" -type f -exec wc -l {} + |
		awk "\$2 != \"total\" && \$1 > 1000 { print; bad = 1 } END { exit bad }"
'

test_expect_success 'every file of libjob/host has a layer and an opening comment naming it' '
	bad= &&
	for f in "$HOST"/*.[ch]; do
		b=${f##*/}
		test -n "$(layer "$b")" || { echo "$b: no layer in $0"; bad=1; }
		head -1 "$f" | grep -q "^/\* $b - " ||
			{ echo "$b: the first line is not \"/* $b - what it owns\""; bad=1; }
	done &&
	test -z "$bad"
'

# upward DIR: print "FILE (layer N) includes HEADER (layer M)" for every
# include of a header of a higher layer by a file of DIR; fails if any.
upward () {
	bad=0
	for f in "$1"/*.[ch]; do
		b=${f##*/}
		lf=$(layer "$b")
		test -n "$lf" || continue
		for h in $(sed -n "s/^#include \"\([^\"]*\)\".*/\1/p" "$f"); do
			lh=$(layer "$h")
			test -n "$lh" || continue	# outside libjob/host
			test "$lh" -le "$lf" ||
				{ echo "$b (layer $lf) includes $h (layer $lh)"; bad=1; }
		done
	done
	return $bad
}

test_expect_success 'no file of libjob/host includes a header of a layer above its own' '
	upward "$HOST"
'

test_expect_success 'the check catches an upward include' '
	mkdir -p fake &&
	printf "/* tcp.c - x */\n#include \"fault.h\"\n" >fake/tcp.c &&
	test_must_fail upward fake >out &&
	grep "tcp.c (layer 1) includes fault.h (layer 2)" out
'

test_done
