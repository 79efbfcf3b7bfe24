"""The `web_search` tool (the original kward's): up to four queries, each answered by an
MCP search endpoint's search tool (config `web_search.url`, default Exa's hosted
`https://mcp.exa.ai/mcp` and its `web_search_exa`; `kward.runtime.mcp` makes the `Search`).

Arguments: `queries` (1 to 4 strings, required), `max_results` (per query, default 5, at
most 20), `recency_filter` (day, week, month or year: results published before then are
left out; results without a date are kept), `domain_filter` (domains to keep results
of; one starting with ``-`` is left out instead; a domain matches its subdomains). The
filters are applied to what the endpoint returns, so more results are asked for when a
filter is set.

The result is compact: per query a heading and each hit's title, URL, date and the start
of its text. The endpoint's answer is read as JSON (``{"results": [{title, url,
publishedDate, text}]}``) or as text blocks (``Title: ...`` / ``URL: ...`` lines); an
answer of neither shape is shown as it came, cut. A failing endpoint (network, HTTP,
an MCP error) is the call's error text, never a failed turn. Pure functions but for the
`search` it is given; the handler runs on the turn's thread.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
from typing import Any, Callable, NamedTuple, Sequence
from urllib.parse import urlsplit

from kward.tools.base import Args, ToolContext, ToolError, ToolResult, ToolSpec

NAME = "web_search"
MAX_QUERIES = 4
MAX_QUERY_CHARS = 1000
DEFAULT_RESULTS = 5
MAX_RESULTS = 20
MAX_DOMAINS = 20
SNIPPET_CHARS = 300
MAX_RAW_CHARS = 8000  # of an answer that could not be read as results
RECENCY_DAYS = {"day": 1, "week": 7, "month": 31, "year": 366}

#: `search(query, num_results, ctx)` -> the endpoint's result (its content text, or an error result).
Search = Callable[[str, int, ToolContext], ToolResult]


class Hit(NamedTuple):
    title: str
    url: str
    published: str | None
    text: str


def web_search_spec(search: Search) -> ToolSpec:
    """The `web_search` tool over `search`."""

    def handler(args: Args, ctx: ToolContext) -> ToolResult:
        return run(args, ctx, search)

    return ToolSpec(
        name=NAME,
        description=("Search the web. Give 1-4 focused queries; returns for each the top results with title, URL, "
                     "date and a snippet. Use for current information, documentation and facts outside the "
                     "workspace."),
        properties={
            "queries": {"type": "array", "minItems": 1, "maxItems": MAX_QUERIES,
                        "items": {"type": "string"}, "description": "1 to 4 search queries."},
            "max_results": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS,
                            "description": f"Results per query; default {DEFAULT_RESULTS}, at most {MAX_RESULTS}."},
            "recency_filter": {"type": "string", "enum": list(RECENCY_DAYS),
                               "description": "Only results published within the last day, week, month or year."},
            "domain_filter": {"type": "array", "maxItems": MAX_DOMAINS, "items": {"type": "string"},
                              "description": "Only results from these domains; prefix a domain with - to exclude it."},
        },
        required=("queries",), handler=handler, read_only=True)


def run(args: Args, ctx: ToolContext, search: Search, today: _dt.date | None = None) -> ToolResult:
    queries = _queries(args.data.get("queries"))
    limit = _limit(args.data.get("max_results"))
    recency = args.data.get("recency_filter")
    if recency is not None and (not isinstance(recency, str) or recency not in RECENCY_DAYS):
        raise ToolError(f"recency_filter must be one of {', '.join(RECENCY_DAYS)}")
    include, exclude = _domains(args.data.get("domain_filter"))
    cutoff = None
    if recency is not None:
        cutoff = (today or _dt.date.today()) - _dt.timedelta(days=RECENCY_DAYS[recency])
    asked = min(MAX_RESULTS, limit * 2) if (include or exclude or cutoff) else limit
    sections: list[str] = []
    failures = 0
    for query in queries:
        ctx.cancel.raise_if_cancelled()
        answer = search(query, asked, ctx)
        if answer.is_error:
            failures += 1
            sections.append(f"## {query}\n{answer.content}")
            continue
        hits = parse_hits(answer.content)
        if hits is None:
            sections.append(f"## {query}\n{_cut(answer.content, MAX_RAW_CHARS)}")
            continue
        kept = [h for h in hits if _wanted(h, include, exclude, cutoff)][:limit]
        sections.append(f"## {query}\n" + ("\n".join(_shown(i, h) for i, h in enumerate(kept, 1))
                                             if kept else "No results."))
    text = "\n\n".join(sections)
    if failures == len(queries):
        return ToolResult.error(f"web search failed:\n{text}")
    return ToolResult(text)


def _queries(value: object) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_QUERIES:
        raise ToolError(f"queries must be a list of 1 to {MAX_QUERIES} search queries")
    out = []
    for q in value:
        if not isinstance(q, str) or not q.strip():
            raise ToolError("queries must be non-empty strings")
        if len(q) > MAX_QUERY_CHARS:
            raise ToolError(f"a query is at most {MAX_QUERY_CHARS} characters")
        out.append(q.strip())
    return out


def _limit(value: object) -> int:
    if value is None:
        return DEFAULT_RESULTS
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value != int(value) or value < 1:
        raise ToolError(f"max_results must be an integer from 1 to {MAX_RESULTS}")
    return min(int(value), MAX_RESULTS)


def _domains(value: object) -> tuple[list[str], list[str]]:
    if value is None:
        return [], []
    if not isinstance(value, list) or len(value) > MAX_DOMAINS or not all(isinstance(d, str) for d in value):
        raise ToolError(f"domain_filter must be a list of at most {MAX_DOMAINS} domains")
    include: list[str] = []
    exclude: list[str] = []
    for raw in value:
        domain = raw.strip().lower()
        target = exclude if domain.startswith("-") else include
        domain = domain.lstrip("-").strip()
        if "://" in domain:
            domain = _hostname(domain)
        domain = domain.strip("./")
        if domain.startswith("www."):
            domain = domain[4:]
        if domain:
            target.append(domain)
    return include, exclude


def _host_matches(host: str, domain: str) -> bool:
    return host == domain or host.endswith("." + domain)


def _hostname(url: str) -> str:
    """The host of `url`, lower case ("" for a URL that does not parse: `http://[x`)."""
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


def _wanted(hit: Hit, include: Sequence[str], exclude: Sequence[str], cutoff: _dt.date | None) -> bool:
    host = _hostname(hit.url)
    if host.startswith("www."):
        host = host[4:]
    if include and not any(_host_matches(host, d) for d in include):
        return False
    if any(_host_matches(host, d) for d in exclude):
        return False
    if cutoff is not None and hit.published:
        day = _date(hit.published)
        if day is not None and day < cutoff:
            return False
    return True


def _date(text: str) -> _dt.date | None:
    match = re.match(r"\s*(\d{4})-(\d{2})-(\d{2})", text)
    if match is None:
        return None
    try:
        return _dt.date(int(match[1]), int(match[2]), int(match[3]))
    except ValueError:
        return None


def parse_hits(text: str) -> list[Hit] | None:
    """The results in an endpoint's answer (JSON or ``Title:``/``URL:`` blocks), None
    when it has neither shape."""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("results"), list):
        return [Hit(_str(r.get("title")) or _str(r.get("url")), _str(r.get("url")),
                    _str(r.get("publishedDate")) or None, _str(r.get("text")) or _str(r.get("summary")))
                for r in data["results"] if isinstance(r, dict) and _str(r.get("url"))]
    return _blocks(text)


def _blocks(text: str) -> list[Hit] | None:
    hits: list[Hit] = []
    fields: dict[str, str] = {}
    body: list[str] = []

    def end() -> None:
        if fields.get("url"):
            hits.append(Hit(fields.get("title") or fields["url"], fields["url"], fields.get("published"),
                            " ".join(body)))
        fields.clear()
        body.clear()

    for line in text.splitlines():
        key, sep, value = line.partition(":")
        name = key.strip().lower()
        if sep and name == "title":
            end()
            fields["title"] = value.strip()
        elif sep and name == "url" and "url" not in fields:
            fields["url"] = value.strip()
        elif sep and name in ("published date", "published", "publisheddate"):
            fields["published"] = value.strip()
        elif sep and name in ("text", "highlights", "summary"):
            body.append(value.strip())
        elif fields:
            body.append(line.strip())
    end()
    return hits or None


def _str(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _shown(index: int, hit: Hit) -> str:
    date = f" ({hit.published[:10]})" if hit.published else ""
    lines = [f"{index}. {_cut(' '.join(hit.title.split()), 200)}", f"   {hit.url}{date}"]
    snippet = _cut(" ".join(hit.text.split()), SNIPPET_CHARS)
    if snippet:
        lines.append(f"   {snippet}")
    return "\n".join(lines)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
