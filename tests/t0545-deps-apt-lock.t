#!/bin/sh
test_description='contrib/deps.sh: ddp_apt waits, bounded and saying so, while another apt holds its lock'
. "$(dirname "$0")/test-lib.sh"

# No cluster, no real apt: an apt-get of the test's own on PATH answers
# as apt-get 2.6 does when unattended-upgrades holds the dpkg lock, as
# many times as fails-left says, then succeeds.  ddp_apt polls every 5 s.

. "$DDP_SRC_DIR/contrib/deps.sh"

fake_apt () {
	mkdir -p bin &&
	echo "$1" >fails-left &&
	cat >bin/apt-get <<-\EOT &&
	#!/bin/sh
	n=$(cat fails-left)
	if [ "$n" -gt 0 ]; then
		echo $((n - 1)) >fails-left
		echo "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (unattended-upgr)" >&2
		echo "E: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another process using it?" >&2
		exit 100
	fi
	echo "apt-get $*"
	EOT
	chmod +x bin/apt-get
}

test_expect_success 'a held lock: waits, names the holder once, then runs' '
	fake_apt 1 &&
	start=$(date +%s) &&
	PATH=$PWD/bin:$PATH ddp_apt install -y foo >out 2>err &&
	took=$(( $(date +%s) - start )) &&
	cat out err &&
	grep -q "^apt-get install -y foo$" out &&
	test $(grep -c "held by process 4242 (unattended-upgr); waiting for it" err) = 1 &&
	test $took -ge 4
'

test_expect_success 'a lock held past DDP_APT_LOCK_WAIT: fails with apt'"'"'s message' '
	fake_apt 100 &&
	test_must_fail env "PATH=$PWD/bin:$PATH" DDP_APT_LOCK_WAIT=1 \
		sh -c ". \"$DDP_SRC_DIR/contrib/deps.sh\"; ddp_apt update" >out 2>err &&
	cat err &&
	grep -q "gave up on apt.s lock after 5 s" err &&
	grep -q "^E: Could not get lock" err
'

test_expect_success 'another error: fails at once, apt'"'"'s message shown' '
	fake_apt 0 &&
	printf "#!/bin/sh\necho \"E: Unable to locate package nosuch\" >&2\nexit 100\n" >bin/apt-get &&
	start=$(date +%s) &&
	test_must_fail env "PATH=$PWD/bin:$PATH" sh -c ". \"$DDP_SRC_DIR/contrib/deps.sh\"; ddp_apt install nosuch" 2>err &&
	test $(( $(date +%s) - start )) -lt 4 &&
	grep -q "Unable to locate package nosuch" err &&
	! grep -q waiting err
'

test_done
