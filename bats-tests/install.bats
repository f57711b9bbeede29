#!/usr/bin/env bats
# meson install: what it installs and that the installed programs work as
# installed (man pages, pkg-config, an fstab mount through mount(8), bash
# completion); scripts/setup's apt-get calls.

load test_helper

setup_file() {
    export DEST="$BATS_FILE_TMPDIR/dest"
    meson install -C "$DRX_BUILD" --destdir "$DEST" --no-rebuild --quiet >"$BATS_FILE_TMPDIR/install.log" 2>&1 ||
        { cat "$BATS_FILE_TMPDIR/install.log" >&2; return 1; }
    # the prefix is the build's (/usr/local by default): find it
    local drx
    drx=$(find "$DEST" -path '*/bin/drx' -type f)
    export PREFIX=${drx%/bin/drx}
    export LIBDIR
    LIBDIR=$(dirname "$(find "$DEST" -name 'libdrxcore.so.*.*' -type f)")
}

teardown() {
    if [ -n "${FSTAB_MNT:-}" ]; then
        unmount_store "$FSTAB_MNT"
        # the daemon mount(8) started in the background, found by its own
        # command line (our store's unique path)
        local pid
        for pid in $(pgrep -f "^$PREFIX/sbin/drxfs $FSTAB_STORE " || true); do
            kill "$pid" 2>/dev/null || true
        done
    fi
}

@test "meson install puts the programs, library, headers, pkg-config file, man pages, example and completion in place" {
    assert_file_executable "$PREFIX/bin/drx"
    assert_file_executable "$PREFIX/sbin/drxfs"
    assert_file_not_exists "$PREFIX/bin/drxfs"
    if [ -x "$DRX_LOAD" ]; then
        assert_file_executable "$PREFIX/bin/drx-load"
    fi
    assert_file_exists "$LIBDIR/libdrxcore.so"
    assert_file_exists "$LIBDIR/pkgconfig/drxcore.pc"
    for h in "$DRX_SOURCE"/libcore/include/drx/*.h; do
        cmp "$h" "$PREFIX/include/drx/$(basename "$h")"
    done
    cmp "$DRX_SOURCE/conf/drxfs.conf" "$PREFIX/share/doc/drxfs/examples/drxfs.conf"
    for page in man1/drx.1 man1/drx-load.1 man3/drx_mp.3 man5/drxfs.conf.5 man8/drxfs.8; do
        assert_file_exists "$PREFIX/share/man/$page"
    done
    assert_file_exists "$PREFIX/share/bash-completion/completions/drx"
    # nothing of the tests or benchmarks
    run find "$DEST" -name 'fsx_drx*' -o -name 'bench*' -o -name 'test_*'
    assert_output ""
    # the installed programs run as installed: mount(8) clears
    # LD_LIBRARY_PATH, so they find the library by themselves
    run env -u LD_LIBRARY_PATH "$PREFIX/bin/drx" --version
    assert_success
    run env -u LD_LIBRARY_PATH "$PREFIX/sbin/drxfs" --version
    assert_success
    assert_line --index 0 --partial "drxfs "
}

@test "man -l renders every page without warnings" {
    for page in man1/drx.1 man1/drx-load.1 man3/drx_mp.3 man5/drxfs.conf.5 man8/drxfs.8; do
        local name=${page#man?/} err="$BATS_TEST_TMPDIR/err"
        run env MANWIDTH=80 man --warnings -P cat -l "$PREFIX/share/man/$page" 2>"$err"
        assert_success
        [ ! -s "$err" ] || { cat "$err"; return 1; }
        assert_line --index 0 --regexp "^${name%.*}\(${name##*.}\)"
        assert_line NAME
        assert_line "SEE ALSO"
    done
    # words joined across the lines man wraps them on
    run sh -c "MANWIDTH=80 man -P cat -l '$PREFIX/share/man/man1/drx.1' | tr -s ' \n' '  '"
    assert_output --partial "drx help COMMAND"
    assert_output --partial "dim0=99: index 99 outside 0..35"
    run env MANWIDTH=80 man -P cat -l "$PREFIX/share/man/man8/drxfs.8"
    assert_output --partial "fuse.drxfs"
    run env MANWIDTH=80 man -P cat -l "$PREFIX/share/man/man5/drxfs.conf.5"
    assert_output --partial "mpiio.hints"
}

@test "pkg-config drxcore builds a program against the installed headers and library" {
    cat >"$BATS_TEST_TMPDIR/prog.c" <<'EOF'
#include <drx/array.h>
#include <drx/config.h>
#include <drx/err.h>
#include <drx/io.h>
#include <drx/log.h>
#include <drx/map.h>
#include <drx/store.h>
#include <drx/stripe.h>
#include <drx/types.h>
#include <drx/view.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    struct drx_array *a;
    struct drx_err err = {{0}};
    if (argc < 2 || drx_array_open(argv[1], DRX_RDONLY, &a, &err) < 0) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    printf("%s %d\n", drx_type_name(drx_array_meta(a)->type), drx_array_meta(a)->rank);
    drx_array_close(a);
    return 0;
}
EOF
    local pc="$LIBDIR/pkgconfig"
    run env PKG_CONFIG_PATH="$pc" PKG_CONFIG_SYSROOT_DIR="$DEST" pkg-config --cflags --libs drxcore
    assert_success
    assert_output --partial "-I$PREFIX/include"
    assert_output --partial "-ldrxcore"
    # a library built with ASan runs only in a program that has it first
    local san=""
    if readelf -d "$LIBDIR/libdrxcore.so" | grep -q libasan; then
        san="-fsanitize=address,undefined"
    fi
    # shellcheck disable=SC2046,SC2086
    cc -std=c17 -Wall -Werror $san -o "$BATS_TEST_TMPDIR/prog" "$BATS_TEST_TMPDIR/prog.c" \
        $(PKG_CONFIG_PATH="$pc" PKG_CONFIG_SYSROOT_DIR="$DEST" pkg-config --cflags --libs drxcore)
    "$DRX" create "$BATS_TEST_TMPDIR/t" --type c64 --shape 2x3 --chunk 1x1
    run env LD_LIBRARY_PATH="$LIBDIR" "$BATS_TEST_TMPDIR/prog" "$BATS_TEST_TMPDIR/t"
    assert_success
    assert_output "c64 2"
}

@test "the installed drxfs mounts from an fstab line through mount -T, with its options" {
    export FSTAB_STORE="$BATS_TEST_TMPDIR/store" FSTAB_MNT="$BATS_TEST_TMPDIR/mnt"
    mkdir -p "$FSTAB_MNT"
    "$PREFIX/bin/drx" init "$FSTAB_STORE" >/dev/null
    "$PREFIX/bin/drx" create "$FSTAB_STORE/temp" --type u8 --shape 3x4 --chunk 2x2 --dims time,lat --fill 66
    printf 'log = { level = "debug"; };\n' >"$BATS_TEST_TMPDIR/drxfs.conf"
    # mount(8) runs mount.fuse3 (as mount.fuse) and it runs PROGRAM#SOURCE
    # with PATH cleared: the program is named by its absolute path here; an
    # install in /usr/local/sbin or /usr/sbin is found by name, as
    # "fuse.drxfs" lines want
    printf '# private fstab of this test\n%s#%s %s fuse defaults,nosuid,nodev,ro,config=%s 0 0\n' "$PREFIX/sbin/drxfs" \
        "$FSTAB_STORE" "$FSTAB_MNT" "$BATS_TEST_TMPDIR/drxfs.conf" >"$BATS_TEST_TMPDIR/fstab"
    run timeout 30 mount -T "$BATS_TEST_TMPDIR/fstab" "$FSTAB_MNT"
    assert_success
    mountpoint -q "$FSTAB_MNT"
    # the mount is drxfs's, from the store, with the options of the line
    run awk -v m="$FSTAB_MNT" '$5 == m { for (i = 7; $i != "-"; i++); print $6, $(i + 1), $(i + 2) }' \
        /proc/self/mountinfo
    # README's words: "defaults" alone would mean dev,suid
    assert_output --regexp "^ro,nosuid,nodev,.* fuse\.drxfs $FSTAB_STORE\$"
    pgrep -f "^$PREFIX/sbin/drxfs $FSTAB_STORE $FSTAB_MNT -o .*config=$BATS_TEST_TMPDIR/drxfs.conf"
    run cat "$FSTAB_MNT/temp/lat=1/data"
    assert_output "BBB"
    run "$PREFIX/bin/drx" info "$FSTAB_MNT/temp/time=9"
    assert_failure
    assert_output --partial "time=9: index 9 outside 0..2"
    run touch "$FSTAB_MNT/new"
    assert_failure
    umount "$FSTAB_MNT"
    ! mountpoint -q "$FSTAB_MNT"
    local i
    for ((i = 0; i < 50; i++)); do
        pgrep -f "^$PREFIX/sbin/drxfs $FSTAB_STORE " >/dev/null || break
        sleep 0.1
    done
    run pgrep -f "^$PREFIX/sbin/drxfs $FSTAB_STORE "
    assert_failure
}

# complete WORD... : what the installed completion offers for the last
# word, one per line (COMP_WORDS and COMP_CWORD as bash would set them).
complete_drx() {
    local file="$PREFIX/share/bash-completion/completions/drx"
    (
        cd "$BATS_TEST_TMPDIR" &&
            PATH="$PREFIX/bin:$PATH" bash -c '
                source "$1"; shift
                COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
                _drx drx "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
                printf "%s\n" "${COMPREPLY[@]}"' complete_drx "$file" "$@"
    )
}

@test "bash completion completes commands, options, types and dimension names" {
    "$DRX" create "$BATS_TEST_TMPDIR/temp" --type f64 --shape 4x5x6 --chunk 2x2x2 --dims time,lat,lon
    mkdir "$BATS_TEST_TMPDIR/sub"
    run bash -c "source '$PREFIX/share/bash-completion/completions/drx' && complete -p drx"
    assert_output "complete -F _drx drx"
    run complete_drx drx cre
    assert_output "create"
    run complete_drx drx --config x.conf e
    assert_output "extend"
    run complete_drx drx help f
    assert_output "fsck"
    run complete_drx drx create --
    assert_line -- "--type"
    assert_line -- "--fill"
    refute_line -- "--json"
    run complete_drx drx create a --type f6
    assert_output "f64"
    # "--type=c" is "--type" "=" "c" to a completion function
    run complete_drx drx create a --shape 2 --type = c
    assert_output "c64
c128"
    run complete_drx drx info te
    assert_output "temp"
    run complete_drx drx info s
    assert_output "sub/"
    run complete_drx drx get temp l
    assert_output "lat=
lon="
    run complete_drx drx put temp time = 1 ti
    assert_output "time="
    run complete_drx drx get temp order = ""
    assert_output "C
F"
    run complete_drx drx extend temp ""
    assert_output "time
lat
lon"
    run complete_drx drx get temp -o out lat = 2 --json
    assert_output ""
    "$DRX" attr set "$BATS_TEST_TMPDIR/temp" units K
    "$DRX" attr set "$BATS_TEST_TMPDIR/temp" long_name "air temperature"
    run complete_drx drx attr get temp ""
    assert_output "units
long_name"
    run complete_drx drx attr rm temp u
    assert_output "units"
    run complete_drx drx attr list temp ""
    assert_output ""
    # bash-completion finds the file where meson installed it (it searches
    # XDG_DATA_DIRS) and loads it on first use
    [ -f /usr/share/bash-completion/bash_completion ] || skip "bash-completion not installed"
    run env XDG_DATA_DIRS="$PREFIX/share:/usr/share" bash -c \
        'source /usr/share/bash-completion/bash_completion && _completion_loader drx; complete -p drx'
    assert_output "complete -F _drx drx"
}

@test "bash completion quotes what it completes (readline, through a terminal): an array or directory name with a space stays one word" {
    "$DRX" create "$BATS_TEST_TMPDIR/my arr" --type u8 --shape 2 --chunk 2
    mkdir "$BATS_TEST_TMPDIR/sub dir"
    # an interactive bash on a pty, the completion loaded, drx a function
    # printing its words; TAB completes, then the line runs
    run timeout 60 "$PY" - "$PREFIX/share/bash-completion/completions/drx" "$BATS_TEST_TMPDIR" <<'PY'
import os, pty, re, select, sys, time
comp, d = sys.argv[1], sys.argv[2]
pid, fd = pty.fork()
if pid == 0:
    os.chdir(d)
    os.environ["PS1"] = "$ "
    os.execvp("bash", ["bash", "--norc", "--noprofile", "-i"])
out = b""
def until(pattern, t=20):
    global out
    end = time.time() + t
    while time.time() < end:
        m = re.search(pattern, out)
        if m:
            return m
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                out += os.read(fd, 4096)
            except OSError:
                break
    return None
os.write(fd, ("source '%s'; drx() { printf '[%%s]' \"$@\"; printf '\\n'; }\n" % comp).encode())
for line in ("drx info my\t\n", "drx info sub\t\n", "drx init sub\t\n"):
    os.write(fd, line.encode())
    m = until(rb"\[(info|init)\](\[[^\r\n]*\])\r\n")
    print(m.group(0).decode().strip() if m else "no answer: %r" % out[-200:])
    out = out[m.end():] if m else b""
os.write(fd, b"exit\n")
PY
    assert_success
    # it was: [info][my][arr] (no -o filenames: the completion unquoted)
    assert_line "[info][my arr]"
    assert_line "[info][sub dir/]"
    assert_line "[init][sub dir/]"
}

@test "scripts/setup waits for the dpkg lock and installs what the man pages and completion need" {
    # apt-get itself is a stub here: the test looks at how it is called
    local stub="$BATS_TEST_TMPDIR/bin"
    mkdir -p "$stub"
    printf '#!/bin/sh\necho "$*" >>"%s/apt.log"\n' "$BATS_TEST_TMPDIR" >"$stub/apt-get"
    chmod +x "$stub/apt-get"
    run env PATH="$stub:$PATH" "$DRX_SOURCE/scripts/setup" --no-build
    assert_success
    run cat "$BATS_TEST_TMPDIR/apt.log"
    assert_line --index 0 --regexp "^-o DPkg::Lock::Timeout=600 update"
    assert_line --index 1 --regexp "^-o DPkg::Lock::Timeout=600 install "
    for p in scdoc man-db bash-completion fuse3 bats; do
        assert_line --index 1 --regexp " $p( |\$)"
    done
}
