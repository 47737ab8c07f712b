#!/bin/sh
test_description='man pages: render without warnings, document every public function'
. "$(dirname "$0")/test-lib.sh"

# No cluster needed: this reads doc/ and the public headers, and asks the
# build tree's doc/Makefile for the page and link lists.

DOC=$DDP_SRC_DIR/doc
DOCMAKE="env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make -s -C $DDP_BUILD_DIR/doc"

command -v groff >/dev/null 2>&1 && test_set_prereq GROFF
command -v man >/dev/null 2>&1 && test_set_prereq MAN
command -v cc >/dev/null 2>&1 && test_set_prereq CC
command -v col >/dev/null 2>&1 && test_set_prereq COL

# public_headers: the installed headers of libjob (include_HEADERS).
public_headers () {
    sed -n -e ':a' -e '/\\$/{N;s/\\\n//;ba' -e '}' \
        -e 's/^include_HEADERS *+\{0,1\}= *//p' "$DDP_SRC_DIR/libjob/Makefile.am" |
    tr ' \t' '\n\n' | sed '/^$/d' | while read -r h; do
        echo "$DDP_SRC_DIR/libjob/$h"
    done
}

# functions HEADER...: names of the functions the headers declare.
functions () {
    cat "$@" | sed -n -E \
        -e '/^[[:space:]]*(typedef|#|\/\*|\*)/d' \
        -e 's/^[A-Za-z_][A-Za-z0-9_ ]*[ *](ddp_[a-z0-9_]+) \(.*/\1/p' | sort -u
}

# page_names PAGE: the names listed in the NAME section of a roff page.
page_names () {
    sed -n '/^\.SH NAME/,/^\.SH /p' "$1" | sed '1d;$d' | tr '\n' ' ' |
    sed 's/ *\\-.*//' | tr ',' '\n' | tr -d ' ' | grep -v '^$'
}

# words FILE: the words of a man page or of a markdown note, lower case, one
# a line; roff requests, font and character escapes and all punctuation are
# dropped, so that a sentence reads the same in a page and in a copy of it.
words () {
    sed -e '/^\.\\"/d' -e 's/^\.[A-Za-z]* *//' -e 's/\\f[BIRP]//g' \
        -e 's/\\([a-z][a-z]//g' -e 's/\\-/-/g' "$1" |
    tr -cs 'A-Za-z0-9_' '\n' | tr 'A-Z' 'a-z' | sed '/^$/d'
}

# shingles: every run of 12 consecutive words of stdin, one a line, sorted.
shingles () {
    awk -v n=12 '{ w[NR % n] = $0 }
        NR >= n { s = w[(NR + 1) % n]
                  for (i = NR - n + 2; i <= NR; i++) s = s " " w[i % n]
                  print s }' | sort -u
}

# How many 12-word runs a note may share with a page: a quoted message or
# two, not a paragraph (a hand-kept copy of a page shares hundreds).
SHARED_MAX=60

test_expect_success 'the page and link lists come from doc/Makefile' '
	$DOCMAKE print-man-pages >pages.out &&
	$DOCMAKE print-man3-links >links.out &&
	# (make may first regenerate doc/Makefile and say so on stdout)
	grep -E "^[a-z0-9_.-]+\.[1-8]\$" pages.out >pages &&
	grep -E "^[a-z0-9_]+\.3:[a-z0-9_]+\.3\$" links.out >links &&
	test -s pages && test -s links &&
	grep -qx ddp.3 pages && grep -qx spank-ddp.8 pages &&
	grep -qx ddp_allreduce.3:ddp_bcast.3 links
'

test_expect_success 'every page in doc/ is installed, and every installed page exists' '
	(cd "$DOC" && ls *.[1-8]) | sort >in-doc &&
	sort pages >listed &&
	test_cmp in-doc listed
'

test_expect_success GROFF 'every page renders with groff -man -ww without a warning' '
	for p in $(cat pages); do
		groff -man -t -ww -z "$DOC/$p" 2>"$p.groff" || return 1
		if test -s "$p.groff"; then cat "$p.groff"; return 1; fi
	done
'

test_expect_success MAN 'every page renders with man --warnings at 80 columns' '
	for p in $(cat pages); do
		LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$DOC/$p" \
			>"$p.txt" 2>"$p.err" || { cat "$p.err"; return 1; }
		if test -s "$p.err"; then cat "$p.err"; return 1; fi
		test -s "$p.txt" || return 1
		# no line wider than the terminal, examples included
		if LC_ALL=C.UTF-8 grep -n ".\{81,\}" "$p.txt"; then
			echo "$p: lines wider than 80 columns"; return 1
		fi
	done
'

test_expect_success MAN 'the pages are not hyphenated inside identifiers' '
	for p in $(cat pages); do
		if LC_ALL=C.UTF-8 grep -n "[a-z_]‐$" "$p.txt"; then
			echo "$p: hyphenated"; return 1
		fi
	done
'

# Each page is the one source of what it says: README.md and the notes in
# doc/ point to it (`man spank-ddp`) instead of keeping a copy by hand.
test_expect_success 'no markdown file repeats a man page' '
	for p in $(cat pages); do
		words "$DOC/$p" | shingles >"$p.runs" || return 1
	done &&
	for m in "$DDP_SRC_DIR/README.md" "$DOC"/*.md; do
		words "$m" | shingles >note.runs &&
		for p in $(cat pages); do
			n=$(comm -12 note.runs "$p.runs" | wc -l) &&
			if test "$n" -gt $SHARED_MAX; then
				echo "$m repeats $n runs of 12 words of $p:"
				echo "keep the page, point to it (man ${p%.*})"
				return 1
			fi
		done || return 1
	done
'

test_expect_success MAN 'a page rendered and pasted into a note would be caught' '
	LC_ALL=C.UTF-8 MANWIDTH=66 man -E UTF-8 -l "$DOC/spank-ddp.8" 2>/dev/null |
		sed -n "/^SECURITY/,/^FILES/p" >copy.md &&
	test $(wc -l <copy.md) -gt 10 &&
	words copy.md | shingles >copy.runs &&
	n=$(comm -12 copy.runs spank-ddp.8.runs | wc -l) &&
	test "$n" -gt $SHARED_MAX
'

test_expect_success 'the public headers declare functions (the scan works)' '
	public_headers >headers &&
	test -s headers &&
	functions $(cat headers) >functions &&
	grep -qx ddp_init functions &&
	grep -qx ddp_log_main functions &&
	grep -qx ddp_sampler_indices functions &&
	! grep -qx ddp_fn_t functions &&
	test $(wc -l <functions) -ge 30
'

test_expect_success 'every public function is named by exactly one section 3 page' '
	for p in $(grep "\.3\$" pages); do
		page_names "$DOC/$p" | sed "s/\$/ $p/"
	done >names &&
	for f in $(cat functions); do
		n=$(grep -c "^$f " names)
		test "$n" = 1 || { echo "$f: named by $n pages"; return 1; }
	done
'

test_expect_success 'every name in a NAME section is a page or has a link to its page' '
	while read -r name page; do
		test "$page" = ddp.3 && continue
		test "$name.3" = "$page" && continue
		grep -qx "$page:$name.3" links ||
			{ echo "$name ($page): no link in doc/Makefile.am"; return 1; }
	done <names
'

test_expect_success 'every link points at a page that names the function' '
	while IFS=: read -r page link; do
		grep -qx "$page" pages || { echo "$link: no page $page"; return 1; }
		grep -qx "${link%.3} $page" names ||
			{ echo "$link: not in the NAME section of $page"; return 1; }
	done <links
'

test_expect_success 'every reference to a slurm-ddp page names an installed page' '
	cat "$DOC"/*.[1-8] | sed "s/\\\\-/-/g" |
		sed -n "s/^\\.BR \\(ddp[a-z0-9_-]*\\|spank-ddp\\) (\\([1-8]\\)).*/\\1.\\2/p" |
		sort -u >refs &&
	grep -qx ddp_init.3 refs && grep -qx spank-ddp.8 refs &&
	sed "s/^[^:]*://" links | cat pages - >names-installed &&
	for r in $(cat refs); do
		grep -qx "$r" names-installed || { echo "no page $r"; return 1; }
	done
'

test_expect_success 'ddp(3) mentions every public function' '
	for f in $(cat functions); do
		grep -q "^\.BR $f ()" "$DOC/ddp.3" ||
			{ echo "ddp.3 does not mention $f"; return 1; }
	done
'

# The variables: those read with getenv, and those of env.c's table (read
# through ddpi_env_*: DDP_TIMEOUT is read nowhere else).
test_expect_success 'ddp(3) documents every DDP_* variable libddp reads' '
	{ grep -h -o "getenv (\"DDP_[A-Z0-9_]*\")" $(find "$DDP_SRC_DIR/libjob" -name "*.c" -not -path "*/test/*") &&
	  grep -o "^ *{ \"DDP_[A-Z0-9_]*\"" "$DDP_SRC_DIR/libjob/common/env.c"; } |
		sed "s/.*\"\(DDP_[A-Z0-9_]*\)\".*/\1/" | sort -u >envvars &&
	grep -qx DDP_TIMEOUT envvars && grep -qx DDP_SHM_SLOT envvars &&
	for v in $(cat envvars); do
		grep -q "^\.B[IR]* .*\b$v\b" "$DOC/ddp.3" ||
			{ echo "ddp.3 does not document $v"; return 1; }
	done
'

test_expect_success 'spank-ddp(8) and the example file have every plugstack.conf key' '
	sed -n "s/^#define SP_CONF_KEYS \"\(.*\)\"/\1/p" \
		"$DDP_SRC_DIR/spank/sp_conf.c" | tr -d " " | tr , "\n" >keys &&
	test $(wc -l <keys) -ge 4 &&
	for k in $(cat keys); do
		grep -q "^\.B[IR]* $k=" "$DOC/spank-ddp.8" ||
			{ echo "spank-ddp.8 does not document $k="; return 1; }
		grep -q "^#  *$k=" "$DDP_SRC_DIR/contrib/plugstack.conf.d/ddp.conf.in" ||
			{ echo "ddp.conf.in does not list $k="; return 1; }
	done
'

test_expect_success 'spank-ddp(8) describes every --ddp word' '
	sed -n "s/^#define SP_OPTION_VALID \"\(.*\)\"/\1/p" \
		"$DDP_SRC_DIR/spank/sp_option.h" | tr -c "a-z\n" " " |
		tr " " "\n" | grep -v -x -e "" -e or -e optionally -e with >words &&
	grep -qx nobind words && grep -qx nccl words &&
	for w in $(cat words); do
		sed -n "/^\.SH OPTIONS/,/^\.SH /p" "$DOC/spank-ddp.8" |
			grep -qx "\.B $w" || { echo "spank-ddp.8: no entry for $w"; return 1; }
	done
'

# The SYNOPSIS of every section 3 page, as rendered, must be C that agrees
# with the header: a redeclaration with other types does not compile.
test_expect_success MAN,CC,COL 'the SYNOPSIS prototypes agree with the header' '
	printf "#include <stdarg.h>\n#include <ddp.h>\n" >synopsis.c &&
	for p in $(grep "\.3\$" pages); do
		LC_ALL=C MANWIDTH=200 man -E ascii -l "$DOC/$p" 2>/dev/null | col -b |
		sed -n "/^SYNOPSIS/,/^DESCRIPTION/p" | sed "1d;\$d" |
		sed -e "/^ *#/d" -e "/^ *Link with/d" -e "/^ *cc /d" \
		    -e "/typedef struct {/,/}/d" >"$p.syn" &&
		cat "$p.syn" >>synopsis.c || return 1
	done &&
	grep -c "ddp_[a-z0-9_]* (" synopsis.c >nproto &&
	test $(cat nproto) -ge $(wc -l <functions) &&
	cc -std=gnu11 -fsyntax-only -Wall -Werror -I"$DDP_SRC_DIR/libjob" synopsis.c
'

test_expect_success MAN,CC,COL 'a changed prototype would be caught' '
	sed "s/int ddp_barrier (void);/long ddp_barrier (void);/" synopsis.c >bad.c &&
	! cmp -s synopsis.c bad.c &&
	test_must_fail cc -std=gnu11 -fsyntax-only -I"$DDP_SRC_DIR/libjob" bad.c
'

test_done
