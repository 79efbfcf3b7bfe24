"""What an approval question shows before a tool runs (`kward.tools.preview`): the diff a
write or edit would make, nothing written; for a call the tool would refuse, its error."""

from kward.tools.preview import preview
from lib.tools_helpers import call, make_ctx


def test_a_write_over_a_file_not_read_shows_the_refusal_not_a_diff(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("old\n")
    ctx = make_ctx(ws)
    shown = preview("write_file", {"path": "a.txt", "content": "new\n"}, ctx)
    assert shown == {"error": "existing file must be read before writing: a.txt"}
    assert not call(ctx, "read_file", path="a.txt").is_error  # read first, as the tool asks
    shown = preview("write_file", {"path": "a.txt", "content": "new\n"}, ctx)
    assert "-old" in shown["diff"] and "+new" in shown["diff"]
    assert (ws / "a.txt").read_text() == "old\n"  # nothing written
    assert "+fresh" in preview("write_file", {"path": "b.txt", "content": "fresh\n"}, ctx)["diff"]
    assert not (ws / "b.txt").exists()
