"""`rpc/schema`, the experimental method: refused with its reason to a client that did not
pass `capabilities.experimentalApi: true` (and not listed), then served: the schema
`kward rpc --print-schema` prints, over the real `kward rpc`."""

from __future__ import annotations

import json

from lib.paths import REPO
from lib.scripted_kward import kward  # noqa: F401 (fixtures)


def test_refused_without_experimental_api_then_served(kward):
    k = kward()
    caps = k.request("initialize", {})["capabilities"]
    assert caps["rpc"]["experimentalApi"]["enabled"] is False and caps["rpc"]["experimentalApi"]["methods"] == [
        "rpc/schema"]
    assert caps["rpc"]["schema"] == {"supported": False, "method": "rpc/schema"}
    refused = k.error("rpc/schema")
    assert refused.code == -32601 and refused.data["reason"] == "experimental_api_required"
    assert refused.data["method"] == "rpc/schema" and "experimentalApi" in refused.message
    caps = k.request("initialize", {"capabilities": {"experimentalApi": True}})["capabilities"]
    assert caps["rpc"]["experimentalApi"]["enabled"] is True
    assert caps["rpc"]["schema"] == {"supported": True, "method": "rpc/schema"}
    schema = k.request("rpc/schema")["schema"]
    assert schema == json.loads((REPO / "docs" / "protocol.schema.json").read_text(encoding="utf-8"))
    # a later initialize decides again
    k.request("initialize", {})
    assert k.error("rpc/schema").data["reason"] == "experimental_api_required"
