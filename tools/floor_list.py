"""The floor of a list refresh: `initialize` and `sessions/list` over kward's framing, answered
from the session files kward writes, with nothing but the work (standard library only).

    python3 tools/floor_list.py        # speaks the protocol on stdin/stdout until EOF

It reads what kward's listing reads, the way it reads it (kward/sessions/listing.py,
reader.py, paths.py): one scandir of `<config dir>/sessions/--<workspace>--/` and a stat per
`*.jsonl` (hidden names skipped), newest first by mtime then name; then, for the newest
files until `limit` sessions are found, the header from the file's first 64 KiB and every
body line after it (tool_execution_end and memory_state lines passed over undecoded). The
answer has kward's fields, in kward's tree order (header timestamps are taken as written:
kward writes them canonical). Nothing is cached between requests.
Other methods are answered -32601; notifications are ignored.
"""

import json
import os
import re
import sys
import time

WS = re.compile(r"\s+")
SKIP = (b'{"type":"tool_execution_end"', b'{"type":"memory_state"')
COUNTED = ("user", "assistant", "tool", "compactionSummary")


def iso(ns):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ns // 10**9)) + ".%03dZ" % (ns // 10**6 % 1000)


def text(content):
    if not isinstance(content, list):
        return content if isinstance(content, str) else "" if content is None else str(content)
    return " ".join(p if isinstance(p, str) else p["text"] for p in content
                    if isinstance(p, str) or isinstance(p, dict) and isinstance(p.get("text"), str))


def summarize(path, mtime, root):
    with open(path, "rb") as f:
        head = f.read(65536)
        nl = head.find(b"\n")
        h = json.loads(head[:nl] if nl >= 0 else head)
        if h.get("type") != "session" or h.get("version") != 1 or h["version"] is True or not h.get("id"):
            raise ValueError("not a session")
        f.seek(nl + 1 if nl >= 0 else len(head))
        live, name = [], None  # (role, id, first-message text or None)
        for line in f:
            if line.startswith(SKIP) or not line.strip():
                continue
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if not isinstance(r, dict):
                continue
            kind, m = r.get("type"), r.get("message")
            if kind == "message" and isinstance(m, dict):
                role = "tool" if m.get("role") == "toolResult" else m.get("role")
                shown = m.get("content") if m.get("display_content") is None else m["display_content"]
                live.append((role, m.get("id"), text(shown) if role == "user" else None))
            elif kind == "compaction" and isinstance(m, dict):
                first, msgs = m.get("first_kept_entry_id") or m.get("firstKeptEntryId"), [x for x in live if x[0] != "system"]
                start = max((i for i, x in enumerate(msgs) if x[0] == "compactionSummary"), default=0)
                keep = next((i for off in dict.fromkeys((start, 0)) for i in range(off, len(msgs))
                             if msgs[i][1] == first or f"message:{i - off}" == first), None) if first else None
                live = [("compactionSummary", m.get("id"), m.get("summary") or "")] + (msgs[keep:] if keep is not None else [])
            elif kind == "session_info":
                name = r.get("name").strip() if isinstance(r.get("name"), str) else None
    modified, created = iso(mtime), h.get("timestamp") or iso(mtime)
    first = next((x[2] for x in live if x[2] is not None), "")
    return {"id": h["id"], "path": path, "cwd": h.get("cwd") or root, "workspaceRoot": root, "createdAt": created,
            "modifiedAt": max(modified, created), "name": name or None,
            "firstMessage": WS.sub(" ", first).strip()[:120],
            "messageCount": sum(1 for x in live if x[0] in COUNTED),
            "parentId": h.get("parentId") or None, "parentPath": h.get("parentPath") or None, "_mtime": mtime}


def list_sessions(params):
    env = os.environ
    config = os.path.dirname(os.path.abspath(os.path.expanduser(env["KWARD_CONFIG_PATH"]))) \
        if env.get("KWARD_CONFIG_PATH") else os.path.join(env.get("HOME") or os.path.expanduser("~"), ".kward")
    root = os.path.realpath(os.path.expanduser(params.get("workspaceRoot") or "."))
    limit = params.get("limit") or 20
    directory = os.path.join(config, "sessions", "--" + re.sub(r"[/\\:]", "-", root.lstrip("/")) + "--")
    try:
        with os.scandir(directory) as it:
            files = sorted(((e.stat().st_mtime_ns, e.name, e.path) for e in it
                            if e.name[:1] != "." and e.name.endswith(".jsonl") and e.is_file()), reverse=True)
    except FileNotFoundError:
        files = []
    found = []
    for mtime, _, path in files:
        if len(found) >= limit:
            break
        try:
            found.append(summarize(os.path.abspath(path), mtime, root))
        except (OSError, ValueError, AttributeError):
            pass
    ids, kids, out = {s["id"] for s in found}, {}, []
    for s in found:
        kids.setdefault(s["parentId"] if s["parentId"] in ids and s["parentId"] != s["id"] else None, []).append(s)

    def visit(group, depth, continues):
        group = [s for s in sorted(group, key=lambda s: -s["_mtime"]) if "depth" not in s]
        for i, s in enumerate(group):
            s.update(depth=depth, isLast=i == len(group) - 1, ancestorContinues=list(continues))
            out.append(s)
            visit(kids.get(s["id"], []), depth + 1, [] if depth == 0 else continues + [i < len(group) - 1])

    visit(kids.get(None, []), 0, [])
    for s in found:
        if "depth" not in s:
            visit([s], 0, [])  # only rows caught in a parent cycle are left
    return {"sessions": [{k: v for k, v in s.items() if v is not None and k != "_mtime"} for s in out]}


def main():
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    while True:
        length = None
        while True:
            line = inp.readline()
            if not line:
                return
            if not line.strip():
                if length is not None:
                    break
                continue
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        msg = json.loads(inp.read(length))
        if "id" not in msg:
            continue
        method, params = msg.get("method"), msg.get("params") or {}
        reply = {"jsonrpc": "2.0", "id": msg["id"]}
        if method == "initialize":
            reply["result"] = {"protocolVersion": 1, "serverName": "kward-floor", "serverVersion": "0",
                               "experimental": True, "capabilities": {}}
        elif method == "sessions/list":
            reply["result"] = list_sessions(params)
        else:
            reply["error"] = {"code": -32601, "message": f"Method not found: {method}"}
        body = json.dumps(reply, ensure_ascii=False, separators=(",", ":")).encode()
        out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        out.flush()


if __name__ == "__main__":
    main()
