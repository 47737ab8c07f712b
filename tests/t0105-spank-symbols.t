#!/bin/sh
test_description='ddp.so exports only the SPANK entry points and its identity'
. "$(dirname "$0")/test-lib.sh"

if ! command -v nm >/dev/null 2>&1; then
	skip_all="nm (binutils) not installed"
	test_done
fi
if [ ! -f "$DDP_PLUGIN" ]; then
	skip_all="$DDP_PLUGIN not built (no Slurm headers)"
	test_done
fi

test_expect_success 'the dynamic symbol table has only slurm_spank_* and plugin_*' '
	nm -D --defined-only "$DDP_PLUGIN" | awk "{print \$3}" | sort >syms &&
	cat syms &&
	grep -qx slurm_spank_init syms &&
	grep -qx slurm_spank_task_init syms &&
	grep -qx plugin_name syms &&
	! grep -Evx "slurm_spank_[a-z_]+|plugin_(name|type|version)|spank_plugin_(name|version)" syms
'
test_expect_success 'the internal parsers are not exported' '
	! grep -q "^sp_" syms &&
	! grep -q "^ddp_" syms
'
test_expect_success 'no shell or exec is linked in' '
	nm -D --undefined-only "$DDP_PLUGIN" | awk "{print \$2}" >undef &&
	! grep -E "^(system|popen|exec[lv]p?e?|posix_spawnp?|fork|vfork)(@|$)" undef
'
# The plugin's claim on MASTER_PORT is a lock file of root's (sp_port_lock:
# openat with O_NOFOLLOW in a directory made with mkdirat, then flock), no
# longer a socket anyone could bind first.  Its sockets are the relay of a
# multi-node step's port (sp_relay.c): one TCP listener in srun (socket,
# bind, listen, accept4, recv, send) and one connection to it from each
# slurmstepd (connect, send, recv).  Nothing sets socket options (no
# SO_REUSEADDR or SO_REUSEPORT to share a port another holds), passes
# descriptors (sendmsg, recvmsg) or pairs sockets.
test_expect_success 'the claim is a flocked file; sockets only for the relay' '
	grep -E "^flock(@|$)" undef &&
	grep -E "^openat(@|$)" undef &&
	grep -E "^mkdirat(@|$)" undef &&
	! grep -E "^(socketpair|setsockopt|send(msg|mmsg)|recv(msg|mmsg))(@|$)" undef
'
test_expect_success 'built with full RELRO and a non-executable stack' '
	if command -v readelf >/dev/null 2>&1; then
		readelf -d "$DDP_PLUGIN" | grep -q "BIND_NOW\|FLAGS.*NOW" &&
		readelf -lW "$DDP_PLUGIN" | grep GNU_STACK | grep -qv RWE
	fi
'
test_done
