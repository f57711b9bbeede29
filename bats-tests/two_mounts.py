#!/usr/bin/python3
"""Random namespace operations through two mounts of one store, checked
against a model (a plain local directory): two_mounts.bats.

    two_mounts.py [--seed N] [--ops N] [--store STORE] A B MODEL

Each operation goes through mount A or mount B (chosen at random, the two
mounts standing in for two nodes of a network file system) and the same
operation to the model; the results (errno, bytes read, sizes at open,
names listed, link targets) must agree.  What may differ by README's
promise is not compared: a stat through a cached name (stale until the
attribute or entry timeout) is made only to have the kernel hold entries
and attributes, and its answer is not checked; a descriptor opened earlier
is compared only while every change to its file came through it.  At the
end, past the entry and attribute timeouts, the tree through each mount
must equal the model with nothing accepted.

Sequential, no sleeps: the seed and the operation count replay a run
exactly (the last operations are printed on a failure).  With --store,
some files are also made directly in the store (plain files, behind both
mounts, as a local process or another node would).
"""
import argparse
import errno
import os
import random
import stat
import sys
import time

NAMES = ["a", "b", "c", "D", "E", "D/a", "D/b", "D/F", "E/a", "D/F/a", "D/F/b"]
# what a descriptor whose name another mount removed or replaced may
# answer: ESTALE, as NFS; EIO when the name holds another type now and
# fstat gave the kernel its attributes (README, Known limitations)
ORPHAN_ERRS = (errno.ESTALE, errno.ENOENT, errno.EIO)
# the entry timeout (1 s) and a margin
STALE_S = 1.5
# symlink targets, none out of the tree: "../a" only below the root
TARGETS = ["a", "b", "D", "zz", "F/a", "D/F"]


def err_of(fn):
    """(errno or 0, value)"""
    try:
        return 0, fn()
    except OSError as e:
        return e.errno, None


def ename(e):
    return errno.errorcode.get(e, str(e)) if e else "ok"


class Fail(Exception):
    pass


class Log(list):
    """the operations done, and with --trace written out at once (a hang
    of a mount leaves them)"""
    trace = None

    def append(self, line):
        super().append(line)
        if self.trace:
            self.trace.write(line + "\n")
            self.trace.flush()


class Run:
    def __init__(self, seed, a, b, model, store):
        self.r = random.Random(seed)
        self.seed = seed
        self.mnts = {"A": a, "B": b}
        self.model = model
        self.store = store
        self.log = Log()
        # held descriptors: (mount, mount fd, model fd, model ino, path, clean)
        self.held = []
        self.n = 0
        self.show = 25
        # mount -> path -> {type: when its kernel last looked it up as that}
        self.seen = {"A": {}, "B": {}}
        # model inode -> {held descriptor: its mount} written through a
        # descriptor not closed yet: another mount sees those bytes only
        # after the close (close-to-open; writers on two mounts
        # coordinate themselves: README, Striped files)
        self.dirty = {}
        self.accepted = 0

    # ---- helpers ----
    def p(self, m, rel):
        return os.path.join(self.mnts[m], rel)

    def q(self, rel):
        return os.path.join(self.model, rel)

    def check(self, what, got, want):
        if got != want:
            raise Fail("%s: mount %r, model %r" % (what, got, want))

    def data(self):
        n = self.r.choice([0, 1, 7, 100, 3000, 5000, 9000])
        return self.r.randbytes(n)

    def taint(self, model_rel_or_ino, by_fd=None):
        """a change to the model file (by path, or an ino) by anything but
        held descriptor by_fd: other held descriptors of it are unchecked
        from now on"""
        ino = model_rel_or_ino
        if isinstance(ino, str):
            try:
                ino = os.stat(self.q(ino)).st_ino
            except OSError:
                return
        for i, h in enumerate(self.held):
            if h[3] == ino and h is not by_fd:
                self.held[i] = h[:5] + (False,) + h[6:]

    def model_ino(self, rel):
        try:
            st = os.stat(self.q(rel))
            return st.st_ino if stat.S_ISREG(st.st_mode) else None
        except OSError:
            return None

    # ---- what the kernels may still hold ----
    def types(self):
        out = {}
        for rel in NAMES:
            try:
                out[rel] = stat.S_IFMT(os.lstat(self.q(rel)).st_mode)
            except OSError:
                out[rel] = 0
        return out

    def prefixes(self, rels):
        for rel in rels:
            parts = rel.split("/")
            for i in range(1, len(parts) + 1):
                yield "/".join(parts[:i])

    def through(self, rel, depth=0):
        """the names a walk to rel looks up in the model now: those above
        it, and where one is a symlink, those its target leads through"""
        out, cur = [], ""
        for part in rel.split("/"):
            name = os.path.join(cur, part) if cur else part
            out.append(name)
            try:
                target = os.readlink(self.q(name))
            except OSError:
                cur = name
                continue
            if depth > 8 or target.startswith("/"):
                break
            cur = os.path.normpath(os.path.join(cur, target))
            if cur == "." or cur.startswith(".."):
                break
            out += self.through(cur, depth + 1)
        return out

    def note(self, m, rels):
        """mount m's kernel looked up rels (and the names above them, and
        those a symlink among them leads through): it may hold each as the
        type the model has now, for the entry timeout (missing names it
        does not keep)"""
        if m not in self.seen:
            return
        now, cur = time.monotonic(), self.types()
        for p in set(n for rel in rels for n in self.through(rel)):
            if cur.get(p):
                self.seen[m].setdefault(p, {})[cur[p]] = now

    def recent(self, m, rels):
        """whether mount m's kernel may still hold one of rels, or a
        directory above them, as another type than it has now (it looked
        it up as that within the entry timeout, 1 s): it judges ENOTDIR,
        EISDIR and the like itself (README, Known limitations: a name whose
        type changed behind the mount)"""
        if m not in self.seen:
            return False
        now, cur = time.monotonic(), self.types()
        # a path through a symlink goes through the names its target
        # gives: any of them
        if any(cur.get(p) == stat.S_IFLNK for p in self.prefixes(rels)):
            rels = NAMES
        for p in self.prefixes(rels):
            for t, when in self.seen[m].get(p, {}).items():
                if t != cur.get(p) and now - when < STALE_S:
                    return True
        return False

    # (ENOTEMPTY: a rename of a name onto a directory above it, which the
    # kernel refuses from the entry it holds, before asking the daemon)
    STALE_ERRS = (errno.ENOTDIR, errno.EISDIR, errno.EINVAL, errno.ENOENT, errno.EPERM, errno.EEXIST, errno.ELOOP,
                  errno.ENOTEMPTY)

    def orphans(self, party):
        """held descriptors of another mount whose name no longer leads to
        their file (removed or replaced by party): that mount's node of
        the name is the new file's or none, as on NFS, where another
        client's removal makes an open file ESTALE: its fstat may fail"""
        for i, h in enumerate(self.held):
            if h[0] != party and len(h) == 6 and self.model_ino(h[4]) != h[3]:
                self.held[i] = h + ("orphan",)

    def shares_inode(self, m, rel):
        """whether mount m holds a descriptor of a file whose name rel
        another mount removed or replaced (an orphan): libfuse's one node
        per path gives the kernel's inode of that file to the name's new
        file too, and a read through the descriptor, which asks the
        attributes with its handle, leaves the kernel the old file's size
        for the inode until the attribute timeout; an open of the name and
        fstat within it show that size (README, Known limitations; seed
        65 at 800 operations: size 0 of 9000 bytes read)"""
        return any(h[0] == m and len(h) > 6 and h[4] == rel for h in self.held)

    def busy(self, m, rels):
        for rel in rels:
            ino = self.model_ino(rel)
            if ino is not None and any(x != m for x in self.dirty.get(ino, {}).values()):
                return True
        return False

    def pair(self, m, rels, model_fn, mount_fn):
        """mount_fn's result and model_fn's, or None when the mount's
        error is one its kernel's stale entry explains (the model is then
        left as it is: the operation did nothing)"""
        got = err_of(mount_fn)
        if m != "S" and got[0] in self.STALE_ERRS and self.recent(m, rels):
            self.log.append("    %s through %s: accepted (a stale entry)" % (ename(got[0]), m))
            self.accepted += 1
            # the kernel may have looked names up afresh for it all the
            # same (those whose entries had expired, a symlink's target):
            # it holds them as they are now (the model is as the store:
            # the operation did nothing), an rmdir of one of them within
            # the entry timeout after another mount's change is judged
            # from that (seed 42 at 800 operations: a stale hold of b
            # looked b up as a symlink, which the other mount removed,
            # and rmdir b said ENOTDIR)
            self.note(m, rels)
            return None
        self.note(m, rels)
        want = err_of(model_fn)
        self.note(m, rels)
        self.orphans(m)
        return got, want

    # ---- operations ----
    def op_write(self, m, rel):
        flags = self.r.choice([
            os.O_CREAT | os.O_EXCL | os.O_WRONLY,
            os.O_CREAT | os.O_TRUNC | os.O_WRONLY,
            os.O_CREAT | os.O_WRONLY | os.O_APPEND,
            os.O_CREAT | os.O_RDWR,
            os.O_WRONLY | os.O_TRUNC,
            os.O_WRONLY | os.O_APPEND,
            os.O_RDWR,
        ])
        d = self.data()
        off = self.r.choice([0, 0, 10, 4090, 8200])
        self.log.append("%s: write %s flags=%#o len=%d off=%d" % (m, rel, flags, len(d), off))

        def go(path):
            fd = os.open(path, flags, 0o644)
            try:
                size0 = os.fstat(fd).st_size
                if flags & os.O_APPEND or not d:
                    os.write(fd, d)
                else:
                    os.pwrite(fd, d, off)
                return size0, os.fstat(fd).st_size
            finally:
                os.close(fd)

        ino = self.model_ino(rel)
        r = self.pair(m, [rel], lambda: go(self.q(rel)), lambda: go(self.p(m, rel)))
        if r is None:
            return
        got, want = r
        if got[0] == want[0] == 0 and got[1] != want[1] and self.shares_inode(m, rel):
            self.log.append("    sizes %s against %s: an orphan's inode: accepted" % (got[1], want[1]))
            self.accepted += 1
        else:
            self.check("write %s" % rel, (ename(got[0]), got[1]), (ename(want[0]), want[1]))
        self.taint(ino if ino is not None else rel)
        self.taint(rel)

    def op_read(self, m, rel):
        self.log.append("%s: read %s" % (m, rel))

        def go(path):
            fd = os.open(path, os.O_RDONLY)
            try:
                size = os.fstat(fd).st_size
                out = b""
                while True:
                    b = os.read(fd, 65536)
                    if not b:
                        break
                    out += b
                return size, len(out), out
            finally:
                os.close(fd)

        r = self.pair(m, [rel], lambda: go(self.q(rel)), lambda: go(self.p(m, rel)))
        if r is None:
            return
        got, want = r
        if want[0] == 0 and got[0] == 0 and got[1][1:] == want[1][1:] and self.shares_inode(m, rel):
            if got[1][0] != want[1][0]:
                self.log.append("    size %d against %d: an orphan's inode: accepted" % (got[1][0], want[1][0]))
                self.accepted += 1
        elif want[0] == 0 and got[0] == 0 and got[1] != want[1]:
            raise Fail("read %s: mount size %d, read %d; model %d" % (rel, got[1][0], got[1][1], want[1][0]))
        self.check("read %s" % rel, ename(got[0]), ename(want[0]))

    def op_unlink(self, m, rel):
        self.log.append("%s: unlink %s" % (m, rel))
        r = self.pair(m, [rel], lambda: os.unlink(self.q(rel)), lambda: os.unlink(self.p(m, rel)))
        if r is None:
            return
        got, want = r
        self.check("unlink %s" % rel, ename(got[0]), ename(want[0]))

    def op_mkdir(self, m, rel):
        self.log.append("%s: mkdir %s" % (m, rel))
        r = self.pair(m, [rel], lambda: os.mkdir(self.q(rel)), lambda: os.mkdir(self.p(m, rel)))
        if r is None:
            return
        got, want = r
        self.check("mkdir %s" % rel, ename(got[0]), ename(want[0]))

    def op_rmdir(self, m, rel):
        self.log.append("%s: rmdir %s" % (m, rel))
        r = self.pair(m, [rel], lambda: os.rmdir(self.q(rel)), lambda: os.rmdir(self.p(m, rel)))
        if r is None:
            return
        got, want = r
        self.check("rmdir %s" % rel, ename(got[0]), ename(want[0]))

    def op_rename(self, m, rel, rel2):
        self.log.append("%s: rename %s %s" % (m, rel, rel2))
        ino = self.model_ino(rel2)
        r = self.pair(m, [rel, rel2], lambda: os.rename(self.q(rel), self.q(rel2)), lambda: os.rename(self.p(m, rel), self.p(m, rel2)))
        if r is None:
            return
        got, want = r
        self.check("rename %s %s" % (rel, rel2), ename(got[0]), ename(want[0]))

    def op_link(self, m, rel, rel2):
        self.log.append("%s: link %s %s" % (m, rel, rel2))
        r = self.pair(m, [rel, rel2], lambda: os.link(self.q(rel), self.q(rel2), follow_symlinks=False), lambda: os.link(self.p(m, rel), self.p(m, rel2), follow_symlinks=False))
        if r is None:
            return
        got, want = r
        self.check("link %s %s" % (rel, rel2), ename(got[0]), ename(want[0]))

    def op_symlink(self, m, rel, target):
        self.log.append("%s: symlink %s -> %s" % (m, rel, target))
        r = self.pair(m, [rel], lambda: os.symlink(target, self.q(rel)), lambda: os.symlink(target, self.p(m, rel)))
        if r is None:
            return
        got, want = r
        self.check("symlink %s" % rel, ename(got[0]), ename(want[0]))

    def op_readlink(self, m, rel):
        self.log.append("%s: readlink %s" % (m, rel))
        r = self.pair(m, [rel], lambda: os.readlink(self.q(rel)), lambda: os.readlink(self.p(m, rel)))
        if r is None:
            return
        got, want = r
        self.check("readlink %s" % rel, (ename(got[0]), got[1]), (ename(want[0]), want[1]))

    def op_list(self, m, rel):
        self.log.append("%s: list %s" % (m, rel))
        r = self.pair(m, [rel], lambda: sorted(os.listdir(self.q(rel))), lambda: sorted(os.listdir(self.p(m, rel))))
        if r is None:
            return
        got, want = r
        self.check("list %s" % rel, (ename(got[0]), got[1]), (ename(want[0]), want[1]))

    def op_stat(self, m, rel):
        # only so that the kernel holds the entry and attributes: a stat
        # through a cached name may be stale until the timeouts
        self.log.append("%s: stat %s" % (m, rel))
        err_of(lambda: os.lstat(self.p(m, rel)))
        self.note(m, [rel])

    def op_store(self, m, rel):
        # a plain file made in the store itself, behind both mounts
        d = self.data()

        def go(path):
            fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
            try:
                os.write(fd, d)
            finally:
                os.close(fd)
        # the store holds striped files as NAME.nafs: only names free there,
        # in directories reached without a symlink (which may name a
        # striped file, NAME in the mount)
        parts = rel.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            if not stat.S_ISDIR(self.types().get("/".join(parts[:i]), 0)):
                return
        if any(os.path.lexists(os.path.join(self.store, rel + s)) for s in (".nafs", ".xmd")):
            return
        ino = self.model_ino(rel)
        if ino is not None and self.dirty.get(ino) or self.types()[rel] == stat.S_IFLNK:
            return
        self.log.append("store: write %s len=%d" % (rel, len(d)))
        ino = self.model_ino(rel)
        got, want = self.pair("S", [rel], lambda: go(self.q(rel)), lambda: go(os.path.join(self.store, rel)))
        self.check("store write %s" % rel, ename(got[0]), ename(want[0]))
        self.taint(ino if ino is not None else rel)

    def op_hold(self, m, rel):
        if len(self.held) >= 3:
            return self.op_close(m, None)
        self.log.append("%s: hold %s" % (m, rel))
        r = self.pair(m, [rel], lambda: os.open(self.q(rel), os.O_RDWR), lambda: os.open(self.p(m, rel), os.O_RDWR))
        if r is None:
            return
        got, want = r
        for e, fd in (want, got):
            if e == 0 and (e != want[0] or e != got[0]):
                os.close(fd)
        self.check("hold %s" % rel, ename(got[0]), ename(want[0]))
        if want[0] == 0:
            ino = os.fstat(want[1]).st_ino
            self.held.append((m, got[1], want[1], ino, rel, True))
            self.log[-1] += " -> held #%d" % (len(self.held) - 1)

    def op_fd(self, m, rel):
        if not self.held:
            return self.op_hold(m, rel)
        i = self.r.randrange(len(self.held))
        h = self.held[i]
        kind = self.r.choice(["read", "write", "read", "close"])
        self.log.append("%s: held #%d (%s, via %s, %s) %s" % (m, i, h[4], h[0], "clean" if h[5] else "tainted", kind))
        if kind == "close":
            return self.close_held(i)
        if kind == "write" and not h[5]:
            # the file changed through another name or mount since this
            # descriptor was opened: two uncoordinated writers (README,
            # Striped files: writers on two mounts coordinate themselves)
            self.log.append("    (not written: changed elsewhere since the open)")
            return
        if kind == "write":
            d = self.data()
            off = self.r.choice([0, 100, 5000])
            want = err_of(lambda: os.pwrite(h[2], d, off))
            got = err_of(lambda: os.pwrite(h[1], d, off))
            self.taint(h[3], by_fd=h)
            if len(h) > 6 and got[0] in ORPHAN_ERRS:
                self.log.append("    %s: the name was replaced through another mount: accepted" % ename(got[0]))
                self.accepted += 1
                return
            self.dirty.setdefault(h[3], {})[id(h)] = h[0]
            if h[5]:
                self.check("held write", ename(got[0]), ename(want[0]))
            return

        def go(fd):
            size = os.fstat(fd).st_size
            return size, os.pread(fd, size + 10, 0)

        want = err_of(lambda: go(h[2]))
        got = err_of(lambda: go(h[1]))
        if len(h) > 6 and got[0] in ORPHAN_ERRS:
            self.log.append("    %s: the name was removed through another mount: accepted" % ename(got[0]))
            self.accepted += 1
            return
        if len(h) > 6 and got[0] == 0 and want[0] == 0 and h[5]:
            # fstat asks by the name, which holds another file now: its
            # size may be that file's (README, Known limitations), and the
            # kernel, which then holds a larger size for the descriptor's
            # file, pads the daemon's short read with zeros to the page;
            # the bytes are the descriptor's own
            g, w = got[1][1], want[1][1]
            n = min(len(g), len(w))
            self.check("held read %s (bytes)" % h[4], (g[:n], g[n:].strip(b"\0")), (w[:n], b""))
            return
        if h[5]:
            self.check("held read %s" % h[4], (ename(got[0]), got[1] and (got[1][0], len(got[1][1]), got[1][1] == (want[1] or (0, b""))[1])),
                       (ename(want[0]), want[1] and (want[1][0], len(want[1][1]), True)))

    def close_held(self, i):
        h = self.held.pop(i)
        d = self.dirty.get(h[3], {})
        d.pop(id(h), None)
        if not d:
            self.dirty.pop(h[3], None)
        os.close(h[2])
        e, _ = err_of(lambda: os.close(h[1]))
        if h[5] and not (len(h) > 6 and e in ORPHAN_ERRS):
            self.check("close held", ename(e), "ok")

    def op_close(self, m, rel):
        if self.held:
            self.log.append("%s: close held #0" % m)
            self.close_held(0)

    # ---- the whole tree through one mount ----
    def walk(self, m, strict=False):
        """the tree through mount m against the model; strict: no stale
        entry accepted (the caller waited out the timeouts)"""
        self.log.append("%s: walk%s" % (m, " (strict)" if strict else ""))

        def entry(path):
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                return ("link", os.readlink(path))
            if stat.S_ISDIR(st.st_mode):
                return ("dir",)
            if not path.startswith(self.model) and self.busy(m, [os.path.relpath(path, self.mnts[m])]):
                return ("file", "being written")
            with open(path, "rb") as f:
                b = f.read()
            return ("file", len(b), hash(b))

        def tree(top, out, rel=""):
            e, names = err_of(lambda: os.listdir(os.path.join(top, rel)))
            if e:
                out[rel + "/"] = ("listing", ename(e))
                return out
            for name in names:
                r = os.path.join(rel, name)
                e, v = err_of(lambda: entry(os.path.join(top, r)))
                out[r] = v if not e else ("error", ename(e))
                if v == ("dir",):
                    tree(top, out, r)
            return out

        want = tree(self.model, {})
        got = tree(self.mnts[m], {})
        for rel, v in got.items():
            if v == ("file", "being written") and want.get(rel, ("",))[0] == "file":
                want[rel] = v
        bad = []
        for rel in sorted(set(got) | set(want)):
            if got.get(rel) != want.get(rel):
                if not strict and self.recent(m, [rel.rstrip("/") or "."]):
                    self.accepted += 1
                    self.log.append("    %s: %s against %s: accepted (a stale entry)" % (rel, got.get(rel), want.get(rel)))
                else:
                    bad.append((rel, got.get(rel), want.get(rel)))
        self.note(m, [r for r in want if not r.endswith("/")])
        if bad:
            raise Fail("walk through %s differs (name, mount, model): %s" % (m, bad[:6]))

    def step(self):
        r = self.r
        m = r.choice("AB")
        rel, rel2 = r.choice(NAMES), r.choice(NAMES)
        if self.busy(m, [rel, rel2]):
            self.log.append("%s: (%s, %s: written through another mount's open descriptor)" % (m, rel, rel2))
            self.n += 1
            return
        ops = [
            (10, lambda: self.op_write(m, rel)),
            (6, lambda: self.op_read(m, rel)),
            (5, lambda: self.op_unlink(m, rel)),
            (4, lambda: self.op_mkdir(m, rel)),
            (3, lambda: self.op_rmdir(m, rel)),
            (7, lambda: self.op_rename(m, rel, rel2)),
            (3, lambda: self.op_link(m, rel, rel2)),
            (3, lambda: self.op_symlink(m, rel, r.choice(TARGETS + (["../a"] if "/" in rel else [])))),
            (3, lambda: self.op_readlink(m, rel)),
            (3, lambda: self.op_list(m, r.choice(["", "D", "E", "D/F"]))),
            (12, lambda: self.op_stat(m, rel)),
            (3, lambda: self.op_hold(m, rel)),
            (6, lambda: self.op_fd(m, rel)),
        ]
        if self.store:
            ops.append((2, lambda: self.op_store(m, rel)))
        total = sum(w for w, _ in ops)
        x = r.randrange(total)
        for w, fn in ops:
            if x < w:
                fn()
                break
            x -= w
        self.n += 1
        if self.n % 25 == 0:
            self.walk(r.choice("AB"))

    def run(self, nops):
        try:
            for _ in range(nops):
                self.step()
            while self.held:
                self.close_held(0)
            # past the entry and attribute timeouts every name agrees
            time.sleep(STALE_S)
            self.walk("A", strict=True)
            self.walk("B", strict=True)
            print("ok; %d answers of stale entries accepted" % self.accepted)
        except Fail as f:
            for h in self.held:
                err_of(lambda: os.close(h[1]))
                os.close(h[2])
            print("seed %d: op %d: %s" % (self.seed, self.n + 1, f))
            print("last operations:")
            for line in self.log[-self.show:]:
                print("  " + line)
            return 1
        return 0


def clean(top):
    for name in os.listdir(top):
        path = os.path.join(top, name)
        if os.path.isdir(path) and not os.path.islink(path):
            clean(path)
            os.rmdir(path)
        else:
            os.unlink(path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--seeds", type=int, default=1, help="runs, seed, seed+1, ...")
    ap.add_argument("--ops", type=int, default=300)
    ap.add_argument("--store")
    ap.add_argument("--trace", help="file: each operation written before it is done")
    ap.add_argument("--show", type=int, default=25, help="operations printed at a failure")
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("model")
    o = ap.parse_args()
    for m in (o.a, o.b):
        if not os.path.ismount(m):
            sys.exit("%s: not a mount point" % m)
    seed = o.seed if o.seed is not None else random.randrange(1 << 30)
    bad = 0
    if o.trace:
        Log.trace = open(o.trace, "w")
    for s in range(seed, seed + o.seeds):
        print("seed %d, %d operations" % (s, o.ops), flush=True)
        for top in (o.a, o.model):
            clean(top)
        if s != seed:
            # cleaned through A: B's kernel may hold entries of the run
            # before until they expire (1 s); a first run starts on new
            # mounts
            time.sleep(1.2)
        run = Run(s, o.a, o.b, o.model, o.store)
        run.show = o.show
        rc = run.run(o.ops)
        bad += rc
        sys.stdout.flush()
        if rc and o.seeds == 1:
            break
    print("failed runs: %d" % bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
