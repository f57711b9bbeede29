#!/usr/bin/python3
"""One system call, its result printed as pjdfstest's fstest does: 0 on
success, the errno's name on failure, or the value asked for (stat fields,
xattr values).  Used by posix.bats.

    posix_op.py [-u UID -g GID] OP ARGS...
"""
import errno
import os
import socket
import stat
import sys

FLAGS = {n: getattr(os, n) for n in dir(os) if n.startswith("O_")}


def flags(text):
    v = 0
    for f in text.split(","):
        v |= FLAGS[f]
    return v


def field(st, name):
    if name == "mode":
        m = stat.S_IMODE(st.st_mode)
        return "0%o" % m if m else "0"
    if name == "type":
        for t, test in (("regular", stat.S_ISREG), ("dir", stat.S_ISDIR),
                        ("fifo", stat.S_ISFIFO), ("socket", stat.S_ISSOCK),
                        ("char", stat.S_ISCHR), ("block", stat.S_ISBLK),
                        ("symlink", stat.S_ISLNK)):
            if test(st.st_mode):
                return t
    if name in ("atime", "mtime", "ctime"):
        return str(getattr(st, "st_%s_ns" % name))
    if name == "rdev":
        return "%d,%d" % (os.major(st.st_rdev), os.minor(st.st_rdev))
    return str(getattr(st, "st_" + name))


def op(name, args):
    if name == "create":
        os.close(os.open(args[0], os.O_CREAT | os.O_EXCL | os.O_WRONLY, int(args[1], 8)))
    elif name == "open":
        mode = int(args[2], 8) if len(args) > 2 else 0o644
        os.close(os.open(args[0], flags(args[1]), mode))
    elif name == "write":  # write NAME OFFSET TEXT (no truncation)
        fd = os.open(args[0], os.O_WRONLY)
        os.pwrite(fd, args[2].encode(), int(args[1]))
        os.close(fd)
    elif name == "read":
        with open(args[0], "rb") as f:
            return f.read().decode(errors="replace") or "''"
    elif name == "unlink":
        os.unlink(args[0])
    elif name == "mkdir":
        os.mkdir(args[0], int(args[1], 8))
    elif name == "rmdir":
        os.rmdir(args[0])
    elif name == "link":
        os.link(args[0], args[1])
    elif name == "symlink":
        os.symlink(args[0], args[1])
    elif name == "rename":
        os.rename(args[0], args[1])
    elif name == "mkfifo":
        os.mkfifo(args[0], int(args[1], 8))
    elif name == "mknod":  # mknod NAME c|b|f MODE MAJOR MINOR
        kind = {"c": stat.S_IFCHR, "b": stat.S_IFBLK, "f": stat.S_IFIFO}[args[1]]
        os.mknod(args[0], kind | int(args[2], 8), os.makedev(int(args[3]), int(args[4])))
    elif name == "bind":
        s = socket.socket(socket.AF_UNIX)
        s.bind(args[0])
        s.close()
    elif name == "chmod":
        os.chmod(args[0], int(args[1], 8))
    elif name == "chown":
        os.chown(args[0], int(args[1]), int(args[2]))
    elif name == "lchown":
        os.lchown(args[0], int(args[1]), int(args[2]))
    elif name == "truncate":
        os.truncate(args[0], int(args[1]))
    elif name == "fallocate":  # fallocate NAME OFFSET LENGTH
        fd = os.open(args[0], os.O_WRONLY)
        os.posix_fallocate(fd, int(args[1]), int(args[2]))
        os.close(fd)
    elif name == "utimensat":  # NAME ATIME_NS MTIME_NS, or now now
        if args[1] == "now":
            os.utime(args[0])
        else:
            os.utime(args[0], ns=(int(args[1]), int(args[2])))
    elif name == "stat":
        return field(os.stat(args[0], follow_symlinks=False), args[1])
    elif name == "setxattr":  # NAME KEY VALUE [create|replace]
        fl = {"create": os.XATTR_CREATE, "replace": os.XATTR_REPLACE}.get(
            args[3] if len(args) > 3 else "", 0)
        os.setxattr(args[0], args[1], args[2].encode(), fl)
    elif name == "getxattr":
        return os.getxattr(args[0], args[1]).decode()
    elif name == "listxattr":
        return ",".join(sorted(os.listxattr(args[0]))) or "''"
    elif name == "removexattr":
        os.removexattr(args[0], args[1])
    elif name == "unlinked":  # open, unlink, then FIELD of fstat or 'read'
        fd = os.open(args[0], os.O_RDWR)
        os.pwrite(fd, b"Hello", 0)
        os.unlink(args[0])
        if args[1] == "read":
            return os.pread(fd, 5, 0).decode()
        if args[1] == "fstat":  # size,nlink,mode after fchmod 0600
            st = os.fstat(fd)
            os.fchmod(fd, 0o600)
            return "%d,%d,%s" % (st.st_size, st.st_nlink, field(os.fstat(fd), "mode"))
        return field(os.fstat(fd), args[1])
    else:
        raise SystemExit("unknown op " + name)
    return "0"


def main(argv):
    os.umask(0)
    if argv[:1] == ["-u"]:
        uid, gid = int(argv[1]), int(argv[3])
        argv = argv[4:]
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    try:
        print(op(argv[0], argv[1:]))
    except OSError as e:
        print(errno.errorcode.get(e.errno, str(e.errno)))


main(sys.argv[1:])
