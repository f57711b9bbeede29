#!/usr/bin/env bats
# Recycled subfiles (README "Striped files"): a removed striped file's
# subfiles wait, emptied, in their stripe directory's pool (.pool/) and new
# files take them.  Through the real mount: new files read only their own
# bytes, also after kill -9 of the daemon; reused subfiles belong to the
# new file's owner; drx fsck calls the pools clean.

load test_helper

setup_file() {
    export S="$BATS_FILE_TMPDIR/store" M="$BATS_FILE_TMPDIR/mnt" D="$BATS_FILE_TMPDIR/disks"
    mkdir -p "$D/0" "$D/1"
    "$DRX" init "$S" --stripe-dirs "$D/0,$D/1" --count 2 --extent 4096 >/dev/null
}

setup() {
    cd "$BATS_TEST_TMPDIR"
}

teardown() {
    unmount_store "$M"
    [ -z "${OWN_DIR:-}" ] || { unmount_store "$OWN_DIR/m"; rm -rf "$OWN_DIR"; }
}

# subfiles of files (not in a pool), pooled files, pooled files with bytes
subfiles() { find "$D" -path '*/.pool' -prune -o -type f -print | wc -l; }
pooled() { find "$D" -path '*/.pool/*' -type f | wc -l; }
# slots holding bytes (a claim, c + 16 hex digits, may: a removal killed
# between moving a subfile into the pool and emptying it)
pooled_nonempty() { find "$D" -path '*/.pool/[0-9][0-9][0-9][0-9]' -type f -size +0 | wc -l; }
inodes() { find "$D" -path '*/.pool' -prune -o -type f -printf '%i\n' | sort; }

# fill FILE N CHAR: N bytes of CHAR
fill() { head -c "$2" /dev/zero | tr '\0' "$3" >"$1"; }

# fsck_clean STORE: drx fsck finds nothing (a mount's batched commit first)
fsck_clean() {
    run "$DRX" fsck "$1"
    echo "$output"
    assert_success
}

@test "a removed file's subfiles are reused, emptied: a new file reads only its own bytes" {
    mount_store "$S" "$M"
    local before i old new
    before=$(subfiles)
    mkdir old
    for i in $(seq 40); do fill "old/f$i" 8192 A; done
    cp -r old "$M/old"
    [ "$(subfiles)" -eq $((before + 80)) ]
    commit_mount "$M"
    old=$(inodes)
    rm -r "$M/old"
    [ "$(subfiles)" -eq "$before" ]
    [ "$(pooled)" -ge 80 ]
    [ "$(pooled_nonempty)" -eq 0 ]
    # new files: one byte past a hole reaching both subfiles, and full ones
    mkdir "$M/new"
    for i in $(seq 20); do
        printf B | dd of="$M/new/h$i" bs=1 seek=6000 status=none
        fill "f$i" 5000 C
        cp "f$i" "$M/new/f$i"
    done
    [ "$(subfiles)" -eq $((before + 80)) ]
    # they are the old files' inodes
    new=$(inodes)
    [ "$(comm -12 <(echo "$old") <(echo "$new") | wc -l)" -ge 70 ]
    for i in $(seq 20); do
        cmp <(head -c 6000 /dev/zero; printf B) "$M/new/h$i"
        cmp "f$i" "$M/new/f$i"
    done
    run grep -rq A "$M/new"
    [ "$status" -eq 1 ]
    # and behind the mount, every subfile holds its file's bytes alone
    commit_mount "$M"
    run grep -rq A "$D"
    [ "$status" -eq 1 ]
    fsck_clean "$S"
    rm -r "$M/new"
    fsck_clean "$S"
}

@test "kill -9 of the daemon while files are removed, then created: no old bytes, fsck clean after repair" {
    local i n f
    mount_store "$S" "$M"
    mkdir old new
    for i in $(seq 300); do fill "old/f$i" $((4096 + i * 7)) A; done
    for i in $(seq 300); do fill "new/f$i" $((4096 + i * 5)) B; done
    cp -r old "$M/old1"
    cp -r old "$M/old2"
    commit_mount "$M"
    # killed while removing
    (rm -rf "$M/old1" 2>/dev/null || true) &
    local rpid=$!
    for ((i = 0; i < 200; i++)); do
        [ "$(ls "$S/old1" 2>/dev/null | wc -l)" -le 250 ] && break
        sleep 0.01
    done
    kill_daemon "$M"
    wait "$rpid" || true
    unmount_store "$M"
    [ "$(pooled_nonempty)" -eq 0 ]
    mount_store "$S" "$M"
    rm -rf "$M/old1" "$M/old2"
    [ "$(pooled)" -gt 0 ]
    # killed while creating from the pool
    (cp -r new "$M/new" 2>/dev/null || true) &
    local cpid=$!
    for ((i = 0; i < 200; i++)); do
        [ "$(ls "$S/new" 2>/dev/null | wc -l)" -ge 50 ] && break
        sleep 0.01
    done
    kill_daemon "$M"
    wait "$cpid" || true
    unmount_store "$M"
    [ "$(pooled_nonempty)" -eq 0 ]
    # bytes past a recorded size, orphans of files not recorded yet and
    # temporaries are all fsck may find; repaired, it is clean
    run "$DRX" fsck "$S"
    if [ "$status" -ne 0 ]; then
        refute_output --regexp "$(printf '%s' 'missing|EIO|shorter|cannot|bad |unknown|not empty')"
        "$DRX" fsck --repair "$S" >/dev/null || true
        fsck_clean "$S"
    fi
    mount_store "$S" "$M"
    for f in "$M"/new/*; do
        n=$(stat -c %s "$f")
        [ "$n" -eq 0 ] && continue
        cmp <(head -c "$n" "new/$(basename "$f")") "$f"
    done
    run grep -rq A "$M/new"
    [ "$status" -eq 1 ]
    # the pool serves on
    rm -rf "$M/new"
    cp -r new "$M/again"
    diff -r new "$M/again"
    commit_mount "$M"
    fsck_clean "$S"
    rm -rf "$M/again"
}

@test "allow_other: a reused subfile is its new owner's; the pool is root's alone" {
    OWN_DIR=$(mktemp -d /tmp/drxfs-pool.XXXXXX)
    chmod 755 "$OWN_DIR"
    local s="$OWN_DIR/s" m="$OWN_DIR/m" i sub pooled_before
    "$DRX" init "$s" --count 2 --extent 4096 >/dev/null
    mount_store "$s" "$m" -o allow_other
    nob() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }
    mkdir "$m/pub"
    chmod 1777 "$m/pub"
    # root's files, removed: their subfiles wait in the pools
    for i in $(seq 10); do head -c 5000 /dev/urandom >"$m/pub/r$i"; done
    chmod 600 "$m"/pub/r*
    # removed while waiting for the batched commit (whose handle holds the
    # subfiles open): pooled all the same, once that handle is closed
    rm "$m"/pub/r*
    pooled_before=$(find "$s/.drx/stripes" -path '*/.pool/*' -type f | wc -l)
    [ "$pooled_before" -ge 20 ]
    run stat -c %a:%u "$s/.drx/stripes/0/.pool"
    assert_output 700:0
    # nobody cannot look into them
    run nob ls "$s/.drx/stripes/0/.pool"
    assert_failure
    # nobody's new file takes pooled subfiles, and they are nobody's
    nob sh -c "umask 022; head -c 5000 /dev/zero >'$m/pub/n'"
    commit_mount "$m"
    [ "$(find "$s/.drx/stripes" -path '*/.pool/*' -type f | wc -l)" -eq $((pooled_before - 2)) ]
    run "$DRX" stripe get "$s/pub/n"
    assert_success
    local subs
    subs=$(printf '%s\n' "$output" | sed -n 's/^subfile [0-9]*: \([^ ]*\) .*/\1/p')
    [ "$(echo "$subs" | wc -l)" -eq 2 ]
    for sub in $subs; do
        assert_equal "$(stat -c %u:%g:%a "$sub")" 65534:65534:644
    done
    cmp <(head -c 5000 /dev/zero) "$m/pub/n"
    # removed again: back to the pool, the root's and emptied
    commit_mount "$m"
    nob rm "$m/pub/n"
    [ "$(find "$s/.drx/stripes" -path '*/.pool/*' -type f | wc -l)" -eq "$pooled_before" ]
    [ -z "$(find "$s/.drx/stripes" -path '*/.pool/*' \( ! -user 0 -o -size +0 \))" ]
    fsck_clean "$s"
    # nobody's fsck skips the pools it may not read (found in the twelfth
    # session: each was "an unknown file in a stripe directory")
    run nob "$DRX" fsck "$s"
    assert_success
    assert_output "$s: clean"
    unmount_store "$m"
}

@test "a root daemon on another user's store leaves the pools and the inodes made ahead to that user: they can remove their store" {
    OWN_DIR=$(mktemp -d /tmp/drxfs-pool.XXXXXX)
    chmod 755 "$OWN_DIR"
    local s="$OWN_DIR/s" m="$OWN_DIR/m" i
    nob() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }
    mkdir "$s"
    chown 65534:65534 "$s"
    nob "$DRX" init "$s" --count 2 --extent 4096 >/dev/null
    mount_store "$s" "$m" -o allow_other
    for i in $(seq 10); do head -c 5000 /dev/urandom >"$m/f$i"; done
    rm "$m"/f*
    head -c 5000 /dev/urandom >"$m/g"
    # the thread has made its files ahead by now or soon
    for ((i = 0; i < 100; i++)); do
        [ "$(find "$s/.drx/fresh" -maxdepth 1 -type f | wc -l)" -ge 100 ] && break
        sleep 0.1
    done
    run stat -c %a:%u "$s/.drx/fresh" "$s/.drx/fresh/new" "$s/.drx/stripes/0/.pool"
    assert_output "$(printf '700:65534\n700:65534\n700:65534')"
    commit_mount "$m"
    cmp <(cat "$m/g") "$m/g"
    unmount_store "$m"
    run nob "$DRX" fsck "$s"
    assert_success
    # everything in it (the store itself sits in root's directory)
    run nob find "$s" -mindepth 1 -delete
    assert_success
    [ -z "$(ls -A "$s")" ]
}
