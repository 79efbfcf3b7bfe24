"""Git's view of a workspace, for telling what a shell command changed (`kward.tools.changes`).

The workspace is in a git work tree when it or an ancestor holds a ``.git`` (a directory, or
a file for worktrees and submodules): that directory is the top level (`find_toplevel`)
and the workspace's path below it the prefix. Every git command runs through
`kward.tools.process.run_command` in the workspace with a timeout (`GIT_TIMEOUT_SECONDS`),
the turn's cancellation, bounded capture (`MAX_OUTPUT_BYTES`) and the environment kward
gives commands minus the variables that would point git at another repository, index or
object store (`git_environment`), plus ``GIT_OPTIONAL_LOCKS=0`` (``git status`` never
refreshes, i.e. writes, the user's index) and ``GIT_LITERAL_PATHSPECS=1`` (a path is a
path: ``*`` in a file name is no glob).

- `Git.status`: ``git status --porcelain=v2 -z --branch --no-ahead-behind
  --untracked-files=all --no-renames --ignore-submodules=all -- .`` (`parse_status`): HEAD's
  commit and the files under the workspace that differ from HEAD or the index, or are
  untracked (each file, not its directory). Ignored files and submodules are left out, a
  rename is a deletion and an addition, and a directory listed as untracked (a nested
  repository) is left out.
  With `paths`, the same restricted to those paths (files or directories: ``-- <paths>``),
  with ``-c core.preloadIndex=false`` (the threads that stat the index's files in parallel
  cost more than they save for a few paths).
- `Git.head_entries`: ``git ls-tree -z -l --full-tree <commit> -- <paths>``: mode, blob id
  and size of paths in a commit.
- `Git.head_contents`: ``git cat-file --batch --filters``: the content of blobs as a
  checkout would write them at their paths (end-of-line conversion, ``ident``,
  ``working-tree-encoding``). A path whose ``filter`` attribute names a configured filter
  driver (``filter.<name>.smudge`` or ``.process``, e.g. Git LFS, which may go to the
  network) is left out. Each blob is framed by a marker line (a name that is no object),
  since git (2.39) heads a filtered blob with its unfiltered size; a name no line can
  carry (a newline, a carriage return, leading blanks) is fetched by a ``git cat-file
  --filters --path=<path> <blob>`` of its own (at most `MAX_ODD_NAMES` per call).
- `Git.changed_between`: ``git diff-tree -r -z --name-only <a> <b> -- .`` (every file of
  `b` when `a` is None: ``git ls-tree -r``).
- `Git.ignored_dirs`: ``git ls-files -z --others --ignored --exclude-standard --directory``:
  the directories git ignores as a whole; `Git.ignored`: ``git check-ignore -z --stdin``.
- `git_dirs`: the repository's git directory and common directory (they differ in a
  linked worktree), found from the ``.git`` file or directory without running git.

Paths in and out are relative to the workspace and ``/``-separated (decoded with
`os.fsdecode`, so any file name round-trips). Any failure (git missing or too old, not a
work tree, a timeout, cut output, output that does not parse) raises `GitUnavailable`;
`kward.errors.Canceled` passes through.

`Git.deadline` (a monotonic time, or None) shortens every timeout so that no command runs
past it (the look after a cancelled command); a command refused or cut by it raises
GitUnavailable without `timed_out`.

Any thread; each call blocks its caller while its git child runs. No shared state.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import tempfile
import time
from typing import Iterable, Mapping, NamedTuple, Sequence

from kward.cancel import CancelToken
from kward.tools.process import run_command

log = logging.getLogger(__name__)

GIT_TIMEOUT_SECONDS = 5.0
MAX_OUTPUT_BYTES = 32 * 1024 * 1024
MAX_ARGV_BYTES = 64 * 1024  # paths per git command line (ls-tree); more are split over several
MAX_ODD_NAMES = 16  # blobs of names no batch line can carry, fetched one git each
STATUS_ARGS = ("status", "--porcelain=v2", "-z", "--branch", "--no-ahead-behind", "--untracked-files=all",
               "--no-renames", "--ignore-submodules=all", "--", ".")
#: Variables that would make git look at another repository, work tree, index or object
#: store than the workspace's own (set, e.g., when kward is started from a git hook).
REDIRECTING_VARIABLES = frozenset({
    "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_PREFIX", "GIT_QUARANTINE_PATH",
})


class GitUnavailable(Exception):
    """git cannot tell (missing, not a work tree, failed, timed out, cut or odd output);
    `timed_out` when it did not answer in time."""

    def __init__(self, message: str, timed_out: bool = False):
        super().__init__(message)
        self.timed_out = timed_out


class TreeEntry(NamedTuple):
    """A path of a commit: git mode (``100644``, ``100755``, ``120000``), blob id, size."""

    mode: str
    oid: str
    size: int


class Status(NamedTuple):
    """What ``git status`` listed: HEAD's commit (None before the first commit) and the
    paths (workspace-relative) of the files it lists."""

    head: str | None
    paths: frozenset[str]


def find_toplevel(workspace: str) -> str | None:
    """The nearest of `workspace` (a realpath) and its ancestors that holds a ``.git``."""
    path = workspace
    while True:
        if os.path.lexists(os.path.join(path, ".git")):
            return path
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent


def git_environment(base: Mapping[str, str]) -> dict[str, str]:
    """`base` without `REDIRECTING_VARIABLES` and git's tracing, with the settings above."""
    env = {k: v for k, v in base.items() if k not in REDIRECTING_VARIABLES and not k.startswith("GIT_TRACE")}
    env.update(GIT_OPTIONAL_LOCKS="0", GIT_LITERAL_PATHSPECS="1", GIT_TERMINAL_PROMPT="0")
    return env


def git_dirs(toplevel: str) -> tuple[str, str] | None:
    """(git directory, common directory) of the repository whose top level is `toplevel`
    (realpaths; equal but in a linked worktree), or None when they cannot be read."""
    dotgit = os.path.join(toplevel, ".git")
    try:
        if os.path.isdir(dotgit):
            gitdir = dotgit
        else:
            with open(dotgit, encoding="utf-8", errors="surrogateescape") as f:
                line = f.readline().rstrip("\n")
            if not line.startswith("gitdir: "):
                return None
            gitdir = os.path.join(toplevel, line[len("gitdir: "):])
        common = gitdir
        if os.path.isfile(os.path.join(gitdir, "commondir")):
            with open(os.path.join(gitdir, "commondir"), encoding="utf-8", errors="surrogateescape") as f:
                common = os.path.join(gitdir, f.readline().rstrip("\n"))
    except OSError:
        return None
    gitdir, common = os.path.realpath(gitdir), os.path.realpath(common)
    return (gitdir, common) if os.path.isdir(gitdir) and os.path.isdir(common) else None


def _strip(prefix: str, raw: bytes) -> str | None:
    """The workspace-relative path of a repository-relative one; None for a directory
    entry or the workspace itself. ValueError for a path outside the workspace."""
    path = os.fsdecode(raw)
    if not path.startswith(prefix):
        raise ValueError(f"git listed a path outside the workspace: {path!r}")
    rel = path[len(prefix):]
    return rel if rel and not rel.endswith("/") else None


_FIELDS = {b"1": 9, b"2": 10, b"u": 11}  # space-separated fields of a record, the path last


def parse_status(data: bytes, prefix: str = "") -> Status:
    """Parse ``git status --porcelain=v2 -z --branch`` output; `prefix` is the workspace's
    path below the top level (``""`` or ``"a/b/"``). ValueError when it does not parse."""
    head: str | None = None
    paths: set[str] = set()
    records = data.split(b"\0")
    if records and records[-1] == b"":
        records.pop()
    i = 0
    while i < len(records):
        record = records[i]
        i += 1
        kind, _, rest = record.partition(b" ")
        if kind == b"#":
            if rest.startswith(b"branch.oid "):
                oid = rest[len(b"branch.oid "):].decode("ascii")
                head = None if oid == "(initial)" else oid
            continue
        if kind == b"!":  # ignored: never asked for, never reported
            continue
        if kind == b"?":
            found = [rest]
        elif kind in _FIELDS:
            parts = record.split(b" ", _FIELDS[kind] - 1)
            if len(parts) != _FIELDS[kind]:
                raise ValueError(f"bad git status record: {record[:80]!r}")
            found = [parts[-1]]
            if kind == b"2":  # (renames are off; a copy or rename still names both paths)
                if i >= len(records):
                    raise ValueError("git status record without its original path")
                found.append(records[i])
                i += 1
        else:
            raise ValueError(f"unknown git status record: {record[:80]!r}")
        for raw in found:
            rel = _strip(prefix, raw)
            if rel is not None:
                paths.add(rel)
    return Status(head, frozenset(paths))


def _chunks(paths: Iterable[str], limit: int = MAX_ARGV_BYTES) -> Iterable[list[str]]:
    chunk: list[str] = []
    size = 0
    for path in paths:
        if chunk and size + len(path) + 1 > limit:
            yield chunk
            chunk, size = [], 0
        chunk.append(path)
        size += len(path) + 1
    if chunk:
        yield chunk


class Git:
    """The git commands above for one workspace. `find` says whether there is one."""

    def __init__(self, workspace: str, toplevel: str, executable: str, env: Mapping[str, str], cancel: CancelToken):
        self.workspace = workspace
        self.toplevel = toplevel
        self.executable = executable
        self.env = git_environment(env)
        self.cancel = cancel
        self.deadline: float | None = None
        rel = os.path.relpath(workspace, toplevel)
        self.prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"

    @property
    def key(self) -> tuple[str, str, frozenset[tuple[str, str]]]:
        """What git's answers depend on here: top level, executable and environment."""
        return (self.toplevel, self.executable, frozenset(self.env.items()))

    @classmethod
    def find(cls, workspace: str, env: Mapping[str, str], cancel: CancelToken) -> "Git | None":
        """A Git when `workspace` lies in a work tree and `git` is on kward's PATH."""
        toplevel = find_toplevel(workspace)
        if toplevel is None:
            return None
        executable = shutil.which("git")
        if executable is None:
            log.debug("no git on PATH: changed files by snapshot")
            return None
        return cls(workspace, toplevel, executable, env, cancel)

    def _run(self, args: list[str], data: bytes | None = None, ok: tuple[int, ...] = (0,),
             config: tuple[str, ...] = (), literal: bool = True) -> bytes:
        """Run ``git [-c <config>...] <args>`` (`data` on its stdin); its stdout when it
        exits with one of `ok`, else GitUnavailable. `literal=False`: without
        ``GIT_LITERAL_PATHSPECS`` (a command that refuses it)."""
        timeout = GIT_TIMEOUT_SECONDS
        if self.deadline is not None:
            timeout = min(timeout, self.deadline - time.monotonic())
            if timeout <= 0:
                raise GitUnavailable(f"no time left for git {args[0]}")
        tmp = None
        try:
            if data is not None:
                tmp = tempfile.TemporaryFile()
                tmp.write(data)
                tmp.flush()
                tmp.seek(0)
            # never a program the work tree's config names (a command may have written it)
            options = ["-c", "core.fsmonitor=false", *(word for item in config for word in ("-c", item))]
            env = self.env if literal else {k: v for k, v in self.env.items() if k != "GIT_LITERAL_PATHSPECS"}
            outcome = run_command([self.executable, *options, *args], cwd=self.workspace, timeout=timeout,
                                  cancel=self.cancel, env=env, cap=MAX_OUTPUT_BYTES,
                                  stdin=None if tmp is None else tmp.fileno())
        except OSError as exc:
            raise GitUnavailable(f"cannot run git: {exc.strerror or exc}") from None
        finally:
            if tmp is not None:
                tmp.close()
        if outcome.timed_out:
            raise GitUnavailable(f"git {args[0]} timed out after {timeout:g} s",
                                 timed_out=timeout >= GIT_TIMEOUT_SECONDS)
        if outcome.exit_status not in ok:
            words = outcome.stderr.decode("utf-8", "replace").strip().splitlines()
            raise GitUnavailable(f"git {args[0]} exited {outcome.exit_status}: {words[0] if words else ''}")
        if outcome.stdout_truncated:
            raise GitUnavailable(f"git {args[0]} wrote more than {MAX_OUTPUT_BYTES} bytes")
        return outcome.stdout

    def status(self, paths: Sequence[str] | None = None) -> Status:
        """Everything under the workspace, or only `paths` (workspace-relative files or
        directories; at least one)."""
        if paths is not None and not paths:
            raise ValueError("no paths to look at")
        if paths is None:
            out = self._run(list(STATUS_ARGS))
        else:
            out = self._run([*STATUS_ARGS[:-1], *paths], config=("core.preloadIndex=false",))
        try:
            return parse_status(out, self.prefix)
        except (ValueError, UnicodeDecodeError) as exc:
            raise GitUnavailable(str(exc)) from None

    def head_entries(self, commit: str, paths: Iterable[str]) -> dict[str, TreeEntry]:
        """The blobs (files and symlinks) among `paths` in `commit`, by path."""
        found: dict[str, TreeEntry] = {}
        for chunk in _chunks(self.prefix + p for p in paths):
            out = self._run(["ls-tree", "-z", "-l", "--full-tree", commit, "--", *chunk])
            for record in out.split(b"\0"):
                if not record:
                    continue
                meta, tab, name = record.partition(b"\t")
                fields = meta.split()
                if not tab or len(fields) != 4:
                    raise GitUnavailable(f"bad ls-tree record: {record[:80]!r}")
                mode, kind, oid, size = (f.decode("ascii") for f in fields)
                rel = _strip_or_fail(self.prefix, name)
                if kind == "blob" and rel is not None:
                    found[rel] = TreeEntry(mode, oid, int(size))
        return found

    def head_contents(self, entries: Mapping[str, TreeEntry],
                      drivers: frozenset[str] | None = None) -> dict[str, bytes]:
        """The content of each path's blob (`entries`: path -> its entry in a commit; the
        caller bounds their sizes) as a checkout writes it there; see the module doc for the
        paths left out. `drivers`: `filter_drivers()` when the caller knows it."""
        oids = {path: entry.oid for path, entry in entries.items()}
        if not oids:
            return {}
        if drivers is None:
            drivers = self.filter_drivers()
        if drivers:
            attrs = self.attributes(list(oids), "filter")
            oids = {p: oid for p, oid in oids.items() if attrs.get(p) not in drivers}
        lines = {p: oid for p, oid in oids.items() if not any(c in p for c in "\n\r") and not p[:1].isspace()}
        found = self._batch_contents(lines)
        for path in sorted(oids.keys() - lines.keys())[:MAX_ODD_NAMES]:  # one git each: rare names
            found[path] = self._run(["cat-file", "--filters", f"--path={self.prefix}{path}", oids[path]])
        return found

    def _batch_contents(self, lines: Mapping[str, str]) -> dict[str, bytes]:
        if not lines:
            return {}
        nonce = secrets.token_hex(8)
        wanted = sorted(lines)
        text = "".join(f"{lines[p]} {self.prefix}{p}\nkward-{nonce}-{i} x\n" for i, p in enumerate(wanted))
        out = self._run(["cat-file", "--batch", "--filters"], os.fsencode(text))
        found: dict[str, bytes] = {}
        pos = 0
        for i, path in enumerate(wanted):
            marker = f"kward-{nonce}-{i} missing\n".encode("ascii")
            end = out.find(b"\n", pos)
            stop = out.find(marker, pos)
            if end < 0 or stop < 0:
                raise GitUnavailable("cat-file output ends early")
            header = out[pos:end].split()
            if len(header) == 3 and header[0].decode("ascii") == lines[path] and header[1] == b"blob" \
                    and stop > end and out[stop - 1:stop] == b"\n":
                found[path] = out[end + 1:stop - 1]
            elif not (len(header) == 2 and header[1] == b"missing" and stop == end + 1):
                raise GitUnavailable(f"bad cat-file header: {out[pos:end][:80]!r}")
            pos = stop + len(marker)
        return found

    def filter_drivers(self) -> frozenset[str]:
        """The names of the filter drivers configured with a smudge or process command."""
        out = self._run(["config", "-z", "--get-regexp", r"^filter\..*\.(smudge|process)$"], ok=(0, 1))
        names = set()
        for record in out.split(b"\0"):
            key = record.split(b"\n", 1)[0].decode("utf-8", "replace")
            if key.startswith("filter.") and key.count(".") >= 2:
                names.add(key[len("filter."):key.rindex(".")])
        return frozenset(names)

    def attributes(self, paths: Sequence[str], name: str) -> dict[str, str]:
        """The value of attribute `name` of each of `paths` (``unspecified``, ``unset``,
        ``set`` or a value)."""
        out = self._run(["check-attr", "-z", "--stdin", name], os.fsencode("".join(p + "\0" for p in paths)))
        fields = out.split(b"\0")
        found: dict[str, str] = {}
        for i in range(0, len(fields) - 2, 3):
            found[os.fsdecode(fields[i])] = fields[i + 2].decode("utf-8", "replace")
        return found

    def ignored_dirs(self) -> set[str]:
        """The directories under the workspace that git ignores as a whole (``"a/b/"``)."""
        out = self._run(["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"])
        return {os.fsdecode(raw) for raw in out.split(b"\0") if raw.endswith(b"/")}

    def ignored(self, paths: Sequence[str]) -> set[str]:
        """Those of `paths` (workspace-relative; a directory may end with ``/``) git ignores.
        (``git check-ignore`` refuses literal pathspecs: each path is given as ``./<path>``,
        so that no name is read as pathspec magic, and globs in names are not expanded.)"""
        if not paths:
            return set()
        out = self._run(["check-ignore", "-z", "--stdin"], os.fsencode("".join(f"./{p}\0" for p in paths)),
                        ok=(0, 1), literal=False)
        return {os.fsdecode(raw)[2:] for raw in out.split(b"\0") if raw.startswith(b"./")}

    def changed_between(self, before: str | None, after: str) -> set[str]:
        """The files under the workspace that differ between commits `before` and `after`
        (all files of `after` when `before` is None)."""
        if before is None:
            spec = [self.prefix.rstrip("/")] if self.prefix else []
            out = self._run(["ls-tree", "-r", "-z", "--name-only", "--full-tree", after, "--", *spec])
        else:
            out = self._run(["diff-tree", "-r", "-z", "--name-only", "--no-renames", before, after, "--", "."])
        found: set[str] = set()
        for raw in out.split(b"\0"):
            rel = _strip_or_fail(self.prefix, raw) if raw else None
            if rel is not None:
                found.add(rel)
        return found


def _strip_or_fail(prefix: str, raw: bytes) -> str | None:
    try:
        return _strip(prefix, raw)
    except ValueError as exc:
        raise GitUnavailable(str(exc)) from None
