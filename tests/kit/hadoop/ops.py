"""A client workload as data: each operation a list `[name, *args]`, run through Hadoop's
FileSystem API (DistributedFileSystem) inside the cluster's process, so the NameNode logs
exactly what a Hadoop client's call logs.

Operations (paths absolute; `data` a str written as UTF-8):
    mkdirs path                       write path data [overwrite=False] [block_size]
    append path data [new_block]      truncate path length (waits for block recovery)
    rename src dst [overwrite]        trash path (moves into the user's .Trash, as `hdfs dfs -rm`)
    concat target [srcs]              delete path [recursive]
    chmod path "0750"                 chown path owner group (either may be null)
    setrep path n                     set_times path mtime atime
    setxattr path name value          removexattr path name
    setacl path [entries]             removeacl path
    symlink target link               read path (returns the text)
    open_file path data (a writer left open; close_file path ends it)
    list path (files below path, recursively: {relative name: length}; {} when path is missing)
    status path (a file's attributes as a dict)   files root ({absolute path: status} below root)
    tree root (every entry below root and root, as a listing shows it: {path: fields})
    tree_lines root out (the same as JSON lines {"path": ..., fields} into the file `out`, in
                      the NameNode's process with bounded memory; returns the entries written)
    shell user [args] [tool] (`hdfs dfs ARGS` as `user`: Hadoop's FsShell, or another CLI Tool
                      such as DFSAdmin; fails on a non-zero exit)
    as_user user [ops] (the ops as `user`, a remote user the NameNode checks and audits)
    concurrently [clients] (each client a list of [user, op], all clients on threads at once)
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import jpype


class Workload:
    def __init__(self, fs: Any, conf: Any) -> None:
        self.fs, self.conf = fs, conf
        self.Path = jpype.JClass("org.apache.hadoop.fs.Path")
        self._open: dict[str, Any] = {}
        self._ops: dict[str, Callable[..., Any]] = {
            name[3:]: getattr(self, name) for name in dir(self) if name.startswith("op_")}

    def run(self, ops: Sequence[Sequence[Any]]) -> list[Any]:
        results = []
        for op in ops:
            name, *args = op
            if name not in self._ops:
                raise ValueError(f"unknown workload operation {name!r}")
            results.append(self._ops[name](*args))
        return results

    def op_mkdirs(self, path: str) -> bool:
        return bool(self.fs.mkdirs(self.Path(path)))

    def op_write(self, path: str, data: str, overwrite: bool = False,
                 block_size: int | None = None) -> int:
        p, raw = self.Path(path), data.encode()
        if block_size is None:
            out = self.fs.create(p, overwrite)
        else:
            out = self.fs.create(p, overwrite, 4096, self.fs.getDefaultReplication(p), block_size)
        out.write(raw)
        out.close()
        return len(raw)

    def op_open_file(self, path: str, data: str) -> int:
        out = self.fs.create(self.Path(path), False)
        out.write(data.encode())
        out.hflush()
        self._open[path] = out
        return len(data)

    def op_close_file(self, path: str) -> None:
        self._open.pop(path).close()

    def op_append(self, path: str, data: str, new_block: bool = False) -> int:
        flags = jpype.JClass("java.util.EnumSet").of(
            jpype.JClass("org.apache.hadoop.fs.CreateFlag").APPEND)
        if new_block:
            flags.add(jpype.JClass("org.apache.hadoop.fs.CreateFlag").NEW_BLOCK)
        out = self.fs.append(self.Path(path), flags, 4096, None)
        out.write(data.encode())
        out.close()
        return len(data)

    def op_truncate(self, path: str, length: int) -> None:
        p = self.Path(path)
        if not self.fs.truncate(p, length):
            # Truncating inside a block starts block recovery; the file is closed again (and
            # open to the next writer) once it ends.
            deadline = time.monotonic() + 60
            while not self.fs.isFileClosed(p):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"truncate of {path}: block recovery did not end")
                time.sleep(0.05)

    def op_rename(self, src: str, dst: str, overwrite: bool = False) -> None:
        if overwrite:
            opt = jpype.JClass("org.apache.hadoop.fs.Options$Rename")
            self.fs.rename(self.Path(src), self.Path(dst), opt.OVERWRITE)
        else:
            # JPype resolves fs.rename(a, b) to the varargs rename(a, b, Rename...) (OP_RENAME,
            # returns void); `hdfs dfs -mv` calls rename(a, b) (OP_RENAME_OLD), so call that
            # overload by reflection.
            method = self.fs.getClass().getMethod("rename", self.Path, self.Path)
            if not method.invoke(self.fs, self.Path(src), self.Path(dst)):
                raise OSError(f"rename {src} -> {dst} failed")

    def op_trash(self, path: str) -> bool:
        trash = jpype.JClass("org.apache.hadoop.fs.Trash")
        return bool(trash.moveToAppropriateTrash(self.fs, self.Path(path), self.conf))

    def op_concat(self, target: str, srcs: list[str]) -> None:
        array = jpype.JArray(self.Path)([self.Path(s) for s in srcs])
        self.fs.concat(self.Path(target), array)

    def op_delete(self, path: str, recursive: bool = False) -> bool:
        return bool(self.fs.delete(self.Path(path), recursive))

    def op_chmod(self, path: str, perms: str) -> None:
        perm = jpype.JClass("org.apache.hadoop.fs.permission.FsPermission")
        self.fs.setPermission(self.Path(path), perm(jpype.JShort(int(perms, 8))))

    def op_chown(self, path: str, owner: str | None, group: str | None) -> None:
        self.fs.setOwner(self.Path(path), owner, group)

    def op_setrep(self, path: str, replication: int) -> bool:
        return bool(self.fs.setReplication(self.Path(path), jpype.JShort(replication)))

    def op_set_times(self, path: str, mtime: int, atime: int) -> None:
        self.fs.setTimes(self.Path(path), mtime, atime)

    def op_setxattr(self, path: str, name: str, value: str) -> None:
        self.fs.setXAttr(self.Path(path), name, value.encode())

    def op_removexattr(self, path: str, name: str) -> None:
        self.fs.removeXAttr(self.Path(path), name)

    def op_setacl(self, path: str, entries: list[str]) -> None:
        acl = jpype.JClass("org.apache.hadoop.fs.permission.AclEntry")
        self.fs.setAcl(self.Path(path), acl.parseAclSpec(",".join(entries), True))

    def op_removeacl(self, path: str) -> None:
        self.fs.removeAcl(self.Path(path))

    def op_symlink(self, target: str, link: str) -> None:
        self.fs.createSymlink(self.Path(target), self.Path(link), False)

    def op_read(self, path: str) -> str:
        stream = self.fs.open(self.Path(path))
        try:
            return _read_all(stream)
        finally:
            stream.close()

    def op_list(self, path: str) -> dict[str, int]:
        root = self.Path(path)
        if not self.fs.exists(root):
            return {}
        prefix = str(self.fs.makeQualified(root).toUri().getPath()).rstrip("/") + "/"
        found, files = {}, self.fs.listFiles(root, True)
        while files.hasNext():
            status = files.next()
            name = str(status.getPath().toUri().getPath())
            found[name[len(prefix):]] = int(status.getLen())
        return found

    def op_status(self, path: str) -> dict[str, Any]:
        s = self.fs.getFileStatus(self.Path(path))
        return {"length": int(s.getLen()), "mtime": int(s.getModificationTime()),
                "owner": str(s.getOwner()), "group": str(s.getGroup()),
                "perms": format(int(s.getPermission().toShort()) & 0o1777, "04o"),
                "replication": int(s.getReplication())}

    def op_shell(self, user: str, args: list[str], tool: str = "org.apache.hadoop.fs.FsShell"
                 ) -> str:
        """`hdfs dfs ARGS` run by `user`: Hadoop's own FsShell (its temporary `x._COPYING_`
        files, its trash, its rename overloads) through ToolRunner, since FsShell.main exits
        the JVM. A remote-user UGI makes `user` the caller the NameNode checks and records as
        owner (simple auth, as HADOOP_USER_NAME would). Returns what the shell printed.
        tool: another of Hadoop's CLI Tools taking a Configuration (DFSAdmin, ECAdmin,
        StoragePolicyAdmin: `hdfs dfsadmin`, `hdfs ec`, `hdfs storagepolicies`) without a JVM
        per command."""
        ugi = jpype.JClass("org.apache.hadoop.security.UserGroupInformation").createRemoteUser(
            user)
        system = jpype.JClass("java.lang.System")
        buffer = jpype.JClass("java.io.ByteArrayOutputStream")()
        printer = jpype.JClass("java.io.PrintStream")(buffer, True)
        saved = system.out, system.err
        # FsShell's commands print to System.out/err as they are when each one is made.
        system.setOut(printer)
        system.setErr(printer)
        try:
            shell = jpype.JClass(tool)(self.conf)
            code = int(ugi.doAs(_Action(lambda: jpype.JClass("org.apache.hadoop.util.ToolRunner")
                                        .run(shell, jpype.JArray(jpype.JString)(args)))))
        finally:
            system.setOut(saved[0])
            system.setErr(saved[1])
            # Each UGI has its own cached FileSystem (a DFSClient with threads): close them.
            jpype.JClass("org.apache.hadoop.fs.FileSystem").closeAllForUGI(ugi)
        printed = str(buffer.toString("UTF-8"))
        if code != 0:
            raise OSError(f"{tool} {' '.join(args)} (as {user}) exited {code}: {printed}")
        return printed

    def op_as_user(self, user: str, ops: list[list[Any]]) -> list[Any]:
        """A remote-user UGI (simple auth, as HADOOP_USER_NAME) and a FileSystem of its own:
        its DFSClient calls the NameNode as `user`, so permissions and the audit log's ugi= are
        that user's."""
        fs_class = jpype.JClass("org.apache.hadoop.fs.FileSystem")
        fs = fs_class.newInstance(self.fs.getUri(), self.conf, user)
        try:
            return Workload(fs, self.conf).run(ops)
        finally:
            fs.close()

    def op_concurrently(self, clients: list[list[list[Any]]]) -> list[list[dict[str, Any]]]:
        """Clients at once, one thread each; a client is a list of `[user, op]` run in order,
        each op as `user` (a FileSystem per user and client, as as_user). An op's failure is
        its outcome, not the client's end: per client, per op, {"ok": result} or
        {"error": message}, with "start_ms" and "end_ms" read from the JVM's clock, the one
        the NameNode stamps edits and audit lines with."""
        import threading

        outcomes: list[list[dict[str, Any]]] = [[] for _ in clients]
        clock = jpype.JClass("java.lang.System")

        def client(i: int, steps: list[list[Any]]) -> None:
            fs_class = jpype.JClass("org.apache.hadoop.fs.FileSystem")
            mine: dict[str, Workload] = {}
            try:
                for user, op in steps:
                    if user not in mine:
                        mine[user] = Workload(
                            fs_class.newInstance(self.fs.getUri(), self.conf, user), self.conf)
                    start = int(clock.currentTimeMillis())
                    try:
                        outcome: dict[str, Any] = {"ok": mine[user].run([op])[0]}
                    except Exception as exc:  # a refused op is an outcome, not the end
                        outcome = {"error": str(exc)}
                    outcomes[i].append({**outcome, "start_ms": start,
                                        "end_ms": int(clock.currentTimeMillis())})
            finally:
                for w in mine.values():
                    w.fs.close()

        threads = [threading.Thread(target=client, args=(i, steps))
                   for i, steps in enumerate(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return outcomes

    def op_tree(self, root: str) -> dict[str, dict[str, Any]]:
        return dict(self._listing(root))

    def op_tree_lines(self, root: str, out: str) -> int:
        # A million entries as dicts is ~1 GiB in this process and again in the caller's: a
        # file keeps both at one directory page.
        written = 0
        with open(out, "w", encoding="utf-8") as lines:
            for path, entry in self._listing(root):
                lines.write(json.dumps({"path": path, **entry}) + "\n")
                written += 1
        return written

    def _listing(self, root: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every entry below `root` and root itself, as the NameNode lists it: one
        getListing per directory page with block locations (DFSClient.listPaths, the RPC
        `hdfs dfs -ls -R` makes), each entry's HdfsFileStatus fields and, for a directory, its
        quotas (getQuotaUsage; a file has none). Symlinks are listed, never followed."""
        client = self.fs.getClient()
        empty = jpype.JArray(jpype.JByte)(0)
        top = self._entry(root, client.getFileInfo(root))
        yield root, top
        pending = [root] if top["type"] == "DIRECTORY" else []
        while pending:
            parent = pending.pop()
            after = empty
            while True:
                page = client.listPaths(parent, after, True)
                for status in page.getPartialListing():
                    name = str(status.getLocalName())
                    path = ("" if parent == "/" else parent) + "/" + name
                    entry = self._entry(path, status)
                    yield path, entry
                    if entry["type"] == "DIRECTORY":
                        pending.append(path)
                if not page.hasMore():
                    break
                after = page.getLastName()

    def _entry(self, path: str, s: Any) -> dict[str, Any]:
        kind = "DIRECTORY" if s.isDirectory() else "SYMLINK" if s.isSymlink() else "FILE"
        ec = s.getErasureCodingPolicy()
        located = s.getLocatedBlocks() if kind == "FILE" else None
        quota = self.fs.getQuotaUsage(self.Path(path)) if kind == "DIRECTORY" else None
        return {"type": kind, "size": int(s.getLen()), "owner": str(s.getOwner()),
                "group": str(s.getGroup()),
                "perms": format(int(s.getPermission().toShort()) & 0o1777, "04o"),
                "mtime": int(s.getModificationTime()), "atime": int(s.getAccessTime()),
                "replication": int(s.getReplication()),
                "blocks": int(located.locatedBlockCount()) if located is not None else 0,
                "preferred_block_size": int(s.getBlockSize()),
                "storage_policy_id": int(s.getStoragePolicy()),
                "erasure_coding_policy_id": int(ec.getId()) if ec is not None else None,
                "symlink_target": str(s.getSymlink()) if kind == "SYMLINK" else None,
                "under_construction": bool(located.isUnderConstruction())
                if located is not None else False,
                **({"ns_quota": int(quota.getQuota()), "ds_quota": int(quota.getSpaceQuota())}
                   if quota is not None else {})}

    def op_files(self, root: str) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        it = self.fs.listFiles(self.Path(root), True)
        while it.hasNext():
            path = str(it.next().getPath().toUri().getPath())
            out[path] = self.op_status(path)
        return out


@jpype.JImplements("java.security.PrivilegedExceptionAction", deferred=True)
class _Action:
    """A Python callable as the action UserGroupInformation.doAs runs."""

    def __init__(self, call: Callable[[], Any]) -> None:
        self._call = call

    @jpype.JOverride
    def run(self) -> Any:
        return self._call()


def _read_all(stream: Any) -> str:
    chunks, buf = [], jpype.JArray(jpype.JByte)(65536)
    while (n := stream.read(buf)) > 0:
        chunks.append(bytes(buf[:n]))
    return b"".join(chunks).decode()
