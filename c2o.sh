B=/work/wt-relay7/build; DRX=$B/fs/drx; DRXFS=$B/fs/drxfs
T=$(mktemp -d /tmp/r7/c2o.XXXX); cd $T; S=$T/s; M=$T/m; M2=$T/m2
$DRX init $S >/dev/null; mkdir -p $M $M2
$DRXFS -f $S $M 2>$M.log & p1=$!; $DRXFS -f $S $M2 2>$M2.log & p2=$!
for ((i=0;i<100;i++)); do mountpoint -q $M && mountpoint -q $M2 && break; sleep 0.05; done
head -c 1M /dev/zero | tr '\0' A > $M/f; cat $M/f > /dev/null
[ "$1" = norelay ] && kill -9 $(pgrep -P $p1 -x drxfs-inval)
/usr/bin/python3 - $M/f $M2/f <<'PY'
import mmap, os, sys, time, subprocess
fd = os.open(sys.argv[1], os.O_RDONLY); m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
assert m[5000:5001] == b"A"
for n, ch in enumerate(b"BCDEFGH"):
    with open(sys.argv[2], "r+b") as w:
        w.seek(4096); w.write(bytes([ch]) * 8192)
    with open(sys.argv[1], "rb") as r:
        r.seek(5000); got = r.read(1)
    held = os.pread(fd, 1, 5000)
    print(chr(ch), "new open:", got, "held fd:", held, "mmap:", m[5000:5001])
PY
fusermount3 -u $M; fusermount3 -u $M2; wait
