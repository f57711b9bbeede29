#!/usr/bin/env bats
# A daily user other than root (nobody, uid 65534) in his own directory of
# a root daemon's mount (allow_other): what he does every day (git, cp -a,
# rsync, tar, an editor's save, sqlite, his own arrays) gives what it gives
# on a local disk, and what he may not do is refused as there.  Each
# script runs once in a local directory and once on the mount, and the two
# outputs (results, exit codes, messages, modes, owners, times) are
# compared.  From the non-root daily audit of 2026-12-07.

load test_helper

setup() {
    hostile_setup daily
    mkdir -m 700 "$RV/n/home" "$RV/n/local"
    chown 65534:65534 "$RV/n/home" "$RV/n/local"
    user_dir_store
}

teardown() {
    hostile_teardown
}

# daily SCRIPT DIR: user nobody runs the bash SCRIPT in DIR (his), its
# output with DIR written as BASE
daily() {
    local script=$1 dir=$2
    (cd "$dir" && HOME="$RV/n/home" setpriv --reuid=65534 --regid=65534 --clear-groups -- \
        env GIT_AUTHOR_NAME=u GIT_AUTHOR_EMAIL=u@x GIT_COMMITTER_NAME=u GIT_COMMITTER_EMAIL=u@x \
        GIT_AUTHOR_DATE=2020-01-01T00:00:00Z GIT_COMMITTER_DATE=2020-01-01T00:00:00Z \
        PY="$PY" bash -c "$script" 2>&1) | sed "s#$dir#BASE#g"
}

# same_as_local SCRIPT: SCRIPT's output in his directory on the mount is
# its output in a local directory
same_as_local() {
    local here there
    here=$(daily "$1" "$RV/n/local")
    there=$(daily "$1" "$RV/m/u")
    if [ "$here" != "$there" ]; then
        diff <(echo "$here") <(echo "$there") >&2
        return 1
    fi
    echo "$there"
}

@test "git, cp -a, rsync, tar, mv, ln, chmod, touch, umask, an editor's save, sed -i and sqlite as on a local disk" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (a second user)"
    command -v git rsync sqlite3 setfattr >/dev/null || skip "needs git, rsync, sqlite3, setfattr"
    local src="$RV/n/src"
    mkdir "$src" && echo one >"$src/f1" && mkdir "$src/sub" && echo two >"$src/sub/f2" &&
        ln -s f1 "$src/lnk" && touch -d '2001-02-03 04:05:06.123456789' "$src/f1"
    chown -R 65534:65534 "$src"
    run same_as_local '
run() { echo "== $*"; "$@"; echo "rc=$?"; }
st() { stat -c "%n %A %U %G %s %y" "$@"; }
mkdir g && cd g && run git init -q && echo a >a && mkdir d && echo b >d/b &&
run git add -A && run git commit -qm one && echo c >>a && run git commit -qam two &&
run git gc -q && run git status --porcelain && run git diff-files --quiet && cd .. &&
run git clone -q g clone && cd clone && run git gc -q --prune=now && run git fsck --no-progress &&
run git status --porcelain && cd ..
run cp -a '"$src"' cpa; st cpa/f1 cpa/lnk
run rsync -a '"$src"'/ rs/; run rsync -a --itemize-changes '"$src"'/ rs/
mkdir tx && echo x >tx/x && setfattr -n user.k -v v tx/x && run tar cf t.tar --xattrs tx &&
mkdir out && run tar xf t.tar --xattrs -C out && getfattr -n user.k --only-values out/tx/x; echo
mkdir m1 m2 && echo m >m1/f && run mv m1/f m2/f && run ln m2/f hl && run ln -s m2/f sl &&
stat -c "%h" hl && run chmod 640 hl && run touch -d "2003-04-05 06:07:08.5" hl && st hl
(umask 077 && echo u >um && mkdir umd && mkfifo umf) && stat -c "%n %A" um umd umf
echo orig >ed && chmod 640 ed && "$PY" -c "
import os
fd = os.open(\".ed.swp\", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
os.write(fd, b\"saved\\n\"); os.fsync(fd); os.close(fd)
os.chmod(\".ed.swp\", 0o640); os.rename(\".ed.swp\", \"ed\")" && cat ed && stat -c "%n %A" ed
echo "hello world" >sd && run sed -i s/world/there/ sd && cat sd
run sqlite3 db "PRAGMA journal_mode=WAL; CREATE TABLE t(a, b);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000)
INSERT INTO t SELECT x, hex(randomblob(20)) FROM c; SELECT count(*) FROM t; PRAGMA integrity_check;"
"$PY" -c "
import os, shutil
shutil.copytree(\"'"$src"'\", \"ct\", symlinks=True)
for e in sorted(os.scandir(\"ct\"), key=lambda e: e.name):
    s = e.stat(follow_symlinks=False)
    print(e.name, e.is_dir(follow_symlinks=False), e.is_symlink(), oct(s.st_mode), s.st_mtime_ns, e.inode() == s.st_ino)"
ls -A'
    assert_success
    assert_output --partial 'cpa/f1 -rw-r--r-- nobody nogroup 4 2001-02-03 04:05:06.123456789'
    assert_output --partial 'hl -rw-r----- nobody nogroup 2 2003-04-05 06:07:08.500000000'
    assert_output --partial 'um -rw-------'
    refute_output --partial 'rc=1'
}

@test "his own arrays: drx create through the store and the mount, put, numpy, ncdump, xarray, setfattr, extend" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (a second user)"
    command -v ncdump setfattr >/dev/null || skip "needs ncdump and setfattr"
    local p out
    for p in "$RV/s/u/a" "$RV/m/u/b"; do
        out=$(daily "umask 027; '$DRX' create '$p' --type f32 --shape 4x6 --chunk 2x3 --dims time,x &&
            '$PY' -c 'import sys, numpy as np; sys.stdout.buffer.write(np.arange(24, dtype=\"<f4\").tobytes())' |
            '$DRX' put '$p' && setfattr -n user.units -v K '$RV/m/u/${p##*/}' && '$DRX' extend '$p' 0 2 && echo ok" "$RV/n/home")
        [ "$out" = ok ] || { echo "$p: $out" >&2; false; }
    done
    run stat -c '%A %U' "$RV/s/u/a.xmd" "$RV/s/u/b.xta" "$RV/m/u/a/data" "$RV/m/u/b/data"
    assert_output "$(printf '%s\n' '-rw-r----- nobody' '-rw-r----- nobody' '-rw-r----- nobody' '-rw-r----- nobody')"
    run daily "'$PY' -c '
import numpy as np, xarray as xr
for n in \"ab\":
    print(np.load(\"$RV/m/u/%s/data.npy\" % n).sum(), np.fromfile(\"$RV/m/u/%s/data\" % n, dtype=\"<f4\").shape,
          float(xr.open_zarr(\"$RV/m/u/%s/zarr\" % n)[n].sum()))' && ncdump -h '$RV/m/u/b/data.nc' | grep -E 'time = |units'" "$RV/n/home"
    assert_success
    assert_output "$(printf '%s\n' '276.0 (36,) 276.0' '276.0 (36,) 276.0' '	time = UNLIMITED ; // (6 currently)' '		b:units = "K" ;')"
}

@test "root's files, arrays and directories are refused to him as on a local disk" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (a second user)"
    local d
    # the script runs in the parent of his directory: $RV/n and $RV/m
    for d in "$RV/n" "$RV/m"; do
        mkdir -p "$d/r" "$d/r700/arr" "$d/u2"
        chmod 700 "$d/r700"
        chown 65534:65534 "$d/u2"
        echo secret >"$d/r/secret" && chmod 600 "$d/r/secret"
        echo pub >"$d/r/pub"
    done
    echo x >"$RV/n/r700/arr/data"
    rmdir "$RV/m/r700/arr"
    "$DRX" create "$RV/s/r700/arr" --type i32 --shape 4 --chunk 2 >/dev/null
    run same_as_local '
cd ..
run() { "$@" 2>&1 | sed "s#^[a-z]*: ##"; echo "rc=${PIPESTATUS[0]}"; }
run cat r/secret; run cat r700/arr/data; run ls r700
run touch r/new; run mkdir r/d; run ln -s x r/sl; run rm -f r/pub
run chmod 777 r/pub; run chown 65534 r/pub; run touch -d 2001-01-01 r/pub; run truncate -s 0 r/pub
run ln r/secret u2/hl; echo m >u2/m; run mv u2/m r/'
    assert_success
    refute_output --partial 'rc=0'
}

# Found in the audit: drx said "no such array" for root's array in a 0700
# directory (its lookup of the name failed with EACCES, taken as absent),
# where ls and the mount say "Permission denied".
@test "drx says Permission denied, not no such array, for an array in a directory he may not search" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (a second user)"
    mkdir -m 700 "$RV/s/r700"
    "$DRX" create "$RV/s/r700/arr" --type i32 --shape 4 --chunk 2 >/dev/null
    local p
    for p in "$RV/s/r700/arr" "$RV/m/r700/arr"; do
        run nob "$DRX" info "$p"
        assert_failure
        assert_output "drx: info: $RV/s/r700/arr: Permission denied"
        run nob "$DRX" get "$p/dim0=0:2" -o /dev/null
        assert_failure
        assert_output --partial "Permission denied"
    done
}

# member_reads_subfiles FILE: a member of group nogroup who is not nobody
# (uid 65533, gid 65534) reads each subfile of striped FILE (store path)
# straight from its stripe directory; prints what each read gave
member_reads_subfiles() {
    local sub
    for sub in $("$DRX" stripe get "$1" | awk '/^subfile/ && $4 != "(not" {print $3}'); do
        setpriv --reuid=65533 --regid=65534 --clear-groups -- cat "$sub" >/dev/null 2>&1 &&
            echo read || echo refused
    done
}

# Found in the audit: a striped file's subfiles take its mode bits, and
# the group bits of a file with an extended ACL are the ACL's mask (what
# its named users may have), not its group's entry: `setfacl -m
# u:bob:r f` on a 0600 file, or a file made in a directory whose default
# ACL names a user, made the subfiles 0640, and every member of the
# file's group the ACL refused read its bytes in the stripe directories
# (0755).
@test "an ACL that names a user opens a striped file's subfiles to no member of its group" {
    [ "$(id -u)" -eq 0 ] || skip "needs root (a second user)"
    command -v setfacl >/dev/null || skip "needs setfacl"
    local out
    out=$(daily "head -c 70000 /dev/urandom >f && chmod 600 f && setfacl -m u:0:r f &&
        mkdir d && setfacl -d -m u::rw,g::-,o::-,u:0:r d && head -c 70000 /dev/urandom >d/g &&
        head -c 100 /dev/urandom >h && chmod 600 h && setfacl -m u:0:r h && head -c 70000 /dev/urandom >>h &&
        getfacl -cp f d/g h | grep -c '^group::---' && stat -c %A f d/g h" "$RV/m/u")
    [ "$out" = "$(printf '%s\n' 3 -rw-r----- -rw-r----- -rw-r-----)" ] || { echo "$out" >&2; false; }
    # what a local disk does with such a file: the group is refused
    run setpriv --reuid=65533 --regid=65534 --clear-groups -- cat "$RV/m/u/f"
    assert_failure
    run member_reads_subfiles "$RV/s/u/f"
    assert_output "$(printf '%s\n' 'refused' 'refused')"
    run member_reads_subfiles "$RV/s/u/d/g"
    assert_output "$(printf '%s\n' 'refused' 'refused')"
    run member_reads_subfiles "$RV/s/u/h"
    assert_output "$(printf '%s\n' 'refused' 'refused')"
    # a chmod of such a file sets the mask, not the group's entry
    daily "chmod 660 f" "$RV/m/u"
    run member_reads_subfiles "$RV/s/u/f"
    assert_output "$(printf '%s\n' 'refused' 'refused')"
}
