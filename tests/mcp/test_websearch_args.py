"""web_search's arguments and odd endpoint answers (the tool's own logic, over a search
function standing in for the endpoint)."""

import math

import pytest

from kward.cancel import CancelToken
from kward.tools.base import Args, ToolContext, ToolError, ToolResult
from kward.tools.websearch import parse_hits, run


def _ctx(tmp_path):
    return ToolContext(workspace_root=tmp_path, read_paths=set(), cancel=CancelToken())


def _answer(text):
    return lambda query, count, ctx: ToolResult(text)


@pytest.mark.parametrize("args, words", [
    ({"queries": []}, "queries must be a list of 1 to 4"),
    ({"queries": ["a"] * 5}, "queries must be a list of 1 to 4"),
    ({"queries": [""]}, "non-empty"),
    ({"queries": ["a"], "max_results": math.nan}, "max_results must be an integer"),
    ({"queries": ["a"], "max_results": math.inf}, "max_results must be an integer"),
    ({"queries": ["a"], "max_results": 0}, "max_results must be an integer"),
    ({"queries": ["a"], "recency_filter": ["day"]}, "recency_filter must be one of"),
    ({"queries": ["a"], "recency_filter": "decade"}, "recency_filter must be one of"),
    ({"queries": ["a"], "domain_filter": "x.com"}, "domain_filter must be a list"),
])
def test_bad_arguments_are_clear_errors(tmp_path, args, words):
    with pytest.raises(ToolError, match=words):
        run(Args(args), _ctx(tmp_path), _answer("Title: t\nURL: https://a.example/"))


def test_a_url_that_does_not_parse_does_not_fail_the_search(tmp_path):
    answer = "Title: bad\nURL: http://[x\n\nTitle: good\nURL: https://good.example/page\n"
    result = run(Args({"queries": ["q"], "domain_filter": ["-http://[::1", "-bad.example"]}), _ctx(tmp_path),
                 _answer(answer))
    assert not result.is_error and "https://good.example/page" in result.content
    assert len(parse_hits(answer) or []) == 2
