"""Pipes as people use them, through the real `kward` process: piped text attached to the
prompt (capped, with a note, an endless stream never drained), input that is not UTF-8
text refused with one line before anything starts, and stdout holding only the final
answer when the model wrote text before a tool call."""

import errno
import os
import subprocess
import sys

import pytest

from kward.terminal import oneshot
from lib.cli_helpers import cli  # noqa: F401 - fixture
from lib.fake_openrouter import FakeOpenRouter, text as or_text
from lib.pty_term import PtyKward
from lib.scripts import model_error, reasoning, text, tool

CAP = oneshot.PIPED_INPUT_CAP
NEVER_PLAYED = [[model_error("the model must not be asked")]]


def _sent(cli, *args, stdin=None, input=b""):
    """(the finished process, the user message the model got): `kward ARGS` against a
    fake OpenRouter; `stdin` a file or pipe to read instead of `input`."""
    with FakeOpenRouter() as fake:
        fake.script("chat", or_text(["the answer"]))
        env = {"KWARD_PROVIDER": "openrouter", "KWARD_OPENROUTER_BASE_URL": fake.base_url,
               "OPENROUTER_API_KEY": "sk-or-v1-test0123456789"}
        if stdin is None:
            proc = cli.run(*args, input=input, env=env)
        else:
            run = cli.start(*args, env=env, stdin=stdin)
            code = run.finish()
            proc = subprocess.CompletedProcess(args, code, run.out, run.err)
        requests = fake.requests("chat")
    assert (proc.returncode, proc.stdout) == (0, b"the answer\n"), proc.stderr
    [request] = requests
    return proc, request.json["messages"][-1]["content"]


# --- attached ----------------------------------------------------------------------------

def test_piped_text_is_attached_after_the_prompt(cli):
    proc, sent = _sent(cli, "explain this", input="def f():\n    return 1\n")
    assert sent == "explain this\n\nStandard input:\n```\ndef f():\n    return 1\n```"
    assert proc.stderr == b""
    assert cli.session_files() == []


def test_the_fence_is_longer_than_the_backticks_in_the_text(cli):
    _, sent = _sent(cli, "what is this", input="a\n```python\nx\n```\nno newline at the end")
    assert sent == "what is this\n\nStandard input:\n````\na\n```python\nx\n```\nno newline at the end\n````"


def test_a_piped_prompt_alone_and_empty_input_with_a_prompt(cli):
    _, alone = _sent(cli, input="  what is\nthis?\n\n")
    assert alone == "what is\nthis?"
    _, prompt_only = _sent(cli, "just the prompt", input=" \n\n")
    assert prompt_only == "just the prompt"


def test_empty_input_without_a_prompt_is_a_usage_error(cli):
    cli.script(NEVER_PLAYED)
    proc = cli.run(input=b"")
    assert proc.returncode == 2 and proc.stdout == b""
    assert proc.stderr.decode().splitlines() == ["kward: no prompt: standard input was empty (run `kward help` "
                                                 "for the usage)"]


def test_a_large_file_is_cut_with_a_note_in_the_prompt_and_on_stderr(cli):
    big = cli.home / "big.txt"
    big.write_bytes(b"x" * (CAP - 1) + "\u00e9".encode() + b"y" * 1000)  # the cap splits the e-acute
    with big.open("rb") as f:
        proc, sent = _sent(cli, "summarize", stdin=f)
    kept = CAP - 1  # the character the cap would split is left out whole
    assert sent.startswith("summarize\n\nStandard input:\n```\n" + "x" * 100)
    assert sent.endswith("x\n```\n\n(Standard input was cut: only its first "
                         f"{kept} bytes are shown; 1002 more bytes left out.)")
    assert proc.stderr.decode().splitlines() == [
        f"kward: standard input is longer than 200 KiB: only its first {kept} bytes are sent "
        "(1002 more bytes left out)"]


def test_an_endless_stream_is_read_only_up_to_the_cap(cli):
    endless = subprocess.Popen([sys.executable, "-c", "import sys\nwhile True: sys.stdout.write('ab\\n' * 4096)"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        proc, sent = _sent(cli, "what is this", stdin=endless.stdout)
    finally:
        endless.kill()
        endless.wait(10)
        endless.stdout.close()
    assert sent.endswith("\n```\n\n(Standard input was cut: only its first 204800 bytes are shown; the rest was not "
                         "read.)")
    body = sent.split("\n```\n")[1]
    assert len(body) == CAP and body.endswith("\nab")  # the cap cut the last line short
    assert proc.stderr.decode().splitlines() == [
        "kward: standard input is longer than 200 KiB: only its first 204800 bytes are sent (the rest was not read)"]


def test_a_terminal_on_stdin_is_never_read_for_attaching(cli):
    cli.script([[text("on the terminal")]])
    k = PtyKward(["say", "something"], {**cli.env, "TERM": "xterm", "NO_COLOR": "1"}, str(cli.ws))
    with k:
        k.send("typed ahead\r")
        k.expect("on the terminal")
        assert k.wait() == 0


# --- refused ---------------------------------------------------------------------------

@pytest.mark.parametrize("data, args, line", [
    (b"caf\xe9 au lait\n", ["explain"],
     "kward: standard input is not UTF-8 text (byte 0xe9 at offset 3); convert it to UTF-8 first "
     "(iconv -f ENCODING -t UTF-8), or name the file in the prompt instead"),
    (b"ok\n\xff", [],
     "kward: standard input is not UTF-8 text (byte 0xff at offset 3); convert it to UTF-8 first "
     "(iconv -f ENCODING -t UTF-8), or name the file in the prompt instead"),
    (b"\x89PNG\r\n\x1a\n\x00\x00", ["describe"],
     "kward: standard input is not UTF-8 text (byte 0x89 at offset 0); convert it to UTF-8 first "
     "(iconv -f ENCODING -t UTF-8), or name the file in the prompt instead"),
    (b"ELF\x00\x01\x02", ["what is this"],
     "kward: standard input is binary, not text (a NUL byte at offset 3); pipe UTF-8 text, or name the file "
     "in the prompt instead"),
    (b"caf\xc3", ["explain"],  # a character cut short at the end
     "kward: standard input is not UTF-8 text (byte 0xc3 at offset 3); convert it to UTF-8 first "
     "(iconv -f ENCODING -t UTF-8), or name the file in the prompt instead"),
])
def test_input_that_is_not_utf8_text_is_refused_with_one_line(cli, data, args, line):
    cli.script(NEVER_PLAYED)
    proc = cli.run(*args, input=data)
    assert (proc.returncode, proc.stdout, proc.stderr.decode().splitlines()) == (1, b"", [line])
    assert not cli.config_dir.exists()  # refused before anything started: no server, no session


def test_dev_zero_is_refused_at_once(cli):
    cli.script(NEVER_PLAYED)
    with open("/dev/zero", "rb") as zero:
        run = cli.start("explain", stdin=zero)
        assert run.finish(timeout=10) == 1
    assert run.err.decode().splitlines() == ["kward: standard input is binary, not text (a NUL byte at offset 0); "
                                             "pipe UTF-8 text, or name the file in the prompt instead"]
    assert not cli.config_dir.exists()



# --- a standard input that cannot be read (review finding 9) -------------------------------

def test_a_stdin_not_open_for_reading_is_no_input(cli):
    # `kward hi 0>file`: fd 0 open for writing only counts as no input, as a closed fd 0 does
    with open(cli.home / "written", "wb") as write_only:
        proc, sent = _sent(cli, "hi", stdin=write_only)
    assert sent == "hi" and proc.stderr == b""
    cli.script(NEVER_PLAYED)
    with open(cli.home / "written", "wb") as write_only:
        run = cli.start(stdin=write_only)
        assert run.finish() == 2
    assert run.out == b"" and run.err.decode().splitlines() == [
        "kward: no prompt: standard input is not open for reading (run `kward help` for the usage)"]
    assert cli.session_files() == []


@pytest.mark.skipif(not os.path.exists("/proc/self/mem"), reason="needs Linux /proc")
def test_a_stdin_that_fails_when_read_is_one_line_and_exit_1(cli):
    cli.script(NEVER_PLAYED)
    for args in (["explain"], []):
        memory = os.open("/proc/self/mem", os.O_RDONLY)  # read(2) at offset 0 fails: EIO
        try:
            run = cli.start(*args, stdin=memory)
            assert run.finish() == 1
        finally:
            os.close(memory)
        assert run.out == b"" and run.err.decode().splitlines() == [
            "kward: standard input cannot be read (Input/output error); pipe text or a file to kward, or name the "
            "file in the prompt instead"]
        assert not cli.config_dir.exists()


class _Failing:
    def __init__(self, errno_: int):
        self.errno = errno_

    def tell(self) -> int:
        raise OSError(self.errno, os.strerror(self.errno))

    def read(self, size: int) -> bytes:
        raise OSError(self.errno, os.strerror(self.errno))


def test_read_piped_on_an_input_error():
    with pytest.raises(oneshot.PipedInputError, match=r"^standard input cannot be read \(Input/output error\); "):
        oneshot.read_piped(_Failing(errno.EIO))  # type: ignore[arg-type]
    piped = oneshot.read_piped(_Failing(errno.EBADF))  # type: ignore[arg-type]
    assert (piped.text, piped.readable) == ("", False)

# --- only the final answer on stdout -------------------------------------------------------

def test_stdout_holds_only_the_final_answer(cli):
    (cli.ws / "notes.txt").write_text("one\n")
    cli.script([[reasoning("Hmm."), text("Let me read "), text("the notes."), tool("read_file", path="notes.txt")],
                [text("Still looking."), tool("read_file", path="notes.txt")],
                [text("The notes say "), text("one.")]])
    proc = cli.run("what do the notes say")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"The notes say one.\n"
    err = proc.stderr.decode()
    lines = err.splitlines()
    assert lines[:2] == ["Hmm.", "Let me read the notes."] and "Still looking." in lines
    tool_lines = [n for n, line in enumerate(lines) if "read notes.txt  ok" in line]
    assert len(tool_lines) == 2 and 1 < tool_lines[0] < lines.index("Still looking.") < tool_lines[1]
    assert "The notes say" not in err


def test_a_final_answer_without_tools_is_written_whole(cli):
    cli.script([[text("one "), text("two")]])
    proc = cli.run("count")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"one two\n", b"")


def test_on_a_terminal_the_text_before_a_tool_call_streams_as_before(cli):
    (cli.ws / "notes.txt").write_text("one\n")
    cli.script([[text("Let me read."), tool("read_file", path="notes.txt")], [text("They say one.")]])
    with PtyKward(["what do the notes say"], {**cli.env, "TERM": "xterm", "NO_COLOR": "1"}, str(cli.ws)) as k:
        k.expect("Let me read.")
        k.expect("read notes.txt  ok")
        k.expect("They say one.")
        assert k.wait() == 0


# --- the pure functions ----------------------------------------------------------------

def test_decode_keeps_a_character_cut_by_the_cap_out_and_names_bad_bytes():
    assert oneshot.decode_piped("ab\u00e9".encode()[:3], final=False) == ("ab", 2)
    assert oneshot.decode_piped("\ufeffhi".encode()) == ("hi", 5)  # a byte order mark is dropped
    with pytest.raises(oneshot.PipedInputError, match="offset 2"):
        oneshot.decode_piped(b"ab\xff", final=False)
    with pytest.raises(oneshot.PipedInputError, match="NUL byte at offset 1"):
        oneshot.decode_piped(b"a\x00\xff")  # the first problem is named


def test_with_piped_formats():
    piped = oneshot.Piped("x\n", 2)
    assert oneshot.with_piped("p", piped) == "p\n\nStandard input:\n```\nx\n```"
    assert oneshot.with_piped("", piped) == "x"
    assert oneshot.with_piped("p", oneshot.Piped("", 0)) == "p"
    assert oneshot.with_piped("", oneshot.Piped("x", 1, cut=True, left_out=1)) == \
        "x\n\n(Standard input was cut: only its first 1 bytes are shown; 1 more byte left out.)"
