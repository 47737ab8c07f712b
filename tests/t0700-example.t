#!/bin/sh
test_description='the training example: falling loss, identical parameters on
all ranks, and the same losses as a single process with the same global batch'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require

TRAIN=$DDP_BUILD_DIR/contrib/examples/train
ARGS="--epochs 4 --items 2048 --global-batch 64"

# losses FILE: the per-epoch losses a run logged, one a line.
losses () {
	sed -n "s/.*epoch [0-9]* loss \([^ ]*\) .*/\1/p" "$1"
}

# falling FILE: each epoch's loss is below the one before.
falling () {
	losses "$1" | awk "NR > 1 && \$1 >= prev { bad = 1 } { prev = \$1 } END { exit bad || NR < 2 }"
}

test_expect_success 'single process (no srun): loss falls' '
	"$TRAIN" $ARGS --data single.data --checkpoint single.ckpt 2>single.out &&
	cat single.out &&
	test $(losses single.out | wc -l) = 4 &&
	falling single.out &&
	grep "rank 0/1.*parameters identical on all 1 ranks: yes" single.out
'
test_expect_success 'srun --ddp=host -N2 -n4: loss falls on 4 ranks, 2 nodes' '
	ddp_srun --ddp=host -N2 -n4 --ntasks-per-node=2 "$TRAIN" $ARGS \
		--data dist.data --checkpoint dist.ckpt 2>dist.out &&
	cat dist.out &&
	grep "training on 4 ranks, 2 nodes, backend host" dist.out &&
	test $(losses dist.out | wc -l) = 4 &&
	falling dist.out
'
test_expect_success 'all ranks end with bit-identical parameters' '
	grep "parameters identical on all 4 ranks: yes" dist.out
'
test_expect_success 'only the main rank logged and wrote the checkpoint' '
	test $(grep -c "epoch 1 loss" dist.out) = 1 &&
	grep -q "rank 0/4.*epoch 1 loss" dist.out &&
	test -s dist.ckpt &&
	! ls dist.ckpt.* 2>/dev/null
'
test_expect_success 'the losses match the single-process run (rel. 1e-4)' '
	losses single.out >l1 && losses dist.out >l4 &&
	paste l1 l4 >both && cat both &&
	awk "{ d = \$1 - \$2; if (d < 0) d = -d; if (d > 1e-4 * \$1) bad = 1 } END { exit bad }" both
'
# The checkpoint: an 88-byte header, 17 float parameters, an 8-byte sum.
test_expect_success 'the checkpoints match within float tolerance' '
	od -An -v -f -j88 -N68 single.ckpt | tr -s " " "\n" | sed /^$/d >w1 &&
	od -An -v -f -j88 -N68 dist.ckpt | tr -s " " "\n" | sed /^$/d >w4 &&
	test $(wc -l <w1) = 17 && test $(wc -l <w4) = 17 &&
	paste w1 w4 | awk "{ d = \$1 - \$2; if (d < 0) d = -d; if (d > 1e-3 * (1 + (\$1 < 0 ? -\$1 : \$1))) bad = 1 } END { exit bad }"
'
test_expect_success 'a global batch that does not split over the ranks is refused' '
	test_must_fail ddp_srun --ddp=host -N1 -n3 "$TRAIN" --global-batch 64 \
		--epochs 1 2>odd.out &&
	grep "not a multiple of the 3 ranks" odd.out
'
test_expect_success 'bad command-line values are refused with the reason' '
	test_expect_code 2 "$TRAIN" --epochs abc 2>bad.out &&
	grep "bad value for --epochs" bad.out
'
test_done
