"""Running one turn from a terminal: `turns/start`, its `turn/event` stream, its hooks'
`hook/completed`, inline `ui/question`s and Ctrl-C, all through the protocol client.

Ctrl-C while a turn runs: `Interrupts` replaces the SIGINT handler with one that only
counts, so no KeyboardInterrupt can land inside the client's code; the turn loop sees the
count within `POLL` seconds and sends `turns/cancel` (the turn then ends `canceled`). A
second Ctrl-C while the cancel is under way raises `TurnAbandoned` when the caller asked
for it (one-shot mode exits at once); interactive mode keeps waiting for the end.

A `ui/question` of the turn's session is answered through the `ask` callable: it gets the
questions and returns `[{question, answer}]`, or None when the user dismissed them (sent
as `answers: []`); a KeyboardInterrupt inside `ask` cancels the turn, which releases the
question. Without `ask` every question is dismissed.

A `tool/requestApproval` (`kward.terminal.approve`: the `approvals` inbox its handler fills
on the client's callback thread) is taken when no event is waiting (so the call's
`toolCall` line is drawn first) and answered through `approve(params, view)`; a Ctrl-C
there declines the call (the turn goes on), and while the turn is being canceled, or
without `approve`, it is declined unasked. What still waits when the turn ends is declined.

A command hook's run in the turn is shown once it is over (`hook/completed`, in order with
the turn's events: `TurnView.hook`); its `hook/started` shows nothing.

Main thread only (signal handlers can only be set there).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from types import FrameType
from typing import Any, Callable, Iterator

from kward.client import Client, Message, RpcError
from kward.terminal.approve import CTRL_C, Inbox, decline
from kward.terminal.render import TurnView
from kward.terminal.textwidth import clean

POLL = 0.05  # seconds between looks at the Ctrl-C count while waiting for events

#: A question of `ui/question` as the wire has it ({question, header, options[{label,
#: description}]}).
Question = dict[str, Any]
#: Asks the user; the answers ([{question, answer}]), or None when they were dismissed.
Ask = Callable[[list[Question]], list[dict[str, str]] | None]
#: Asks the user about a tool call (the `tool/requestApproval` params); the reply.
Approve = Callable[[dict[str, Any], TurnView], dict[str, Any]]


class TurnAbandoned(Exception):
    """Ctrl-C twice: the caller stops waiting for the canceled turn to end."""


class Interrupts:
    """Counts SIGINTs while `counting()` is active; `raising()` brings KeyboardInterrupt
    back for a blocking read (an inline question, a pick list)."""

    def __init__(self) -> None:
        self.count = 0

    def _count(self, signum: int, frame: FrameType | None) -> None:
        self.count += 1

    @contextlib.contextmanager
    def _handler(self, handler: Callable[[int, FrameType | None], object]) -> Iterator[Interrupts]:
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = signal.signal(signal.SIGINT, handler)
        try:
            yield self
        finally:
            signal.signal(signal.SIGINT, previous)

    def counting(self) -> contextlib.AbstractContextManager[Interrupts]:
        self.count = 0
        return self._handler(self._count)

    def raising(self) -> contextlib.AbstractContextManager[Interrupts]:
        return self._handler(signal.default_int_handler)


def answer_choice(reply: str, question: Question) -> str:
    """A typed reply as the answer: an option's number picks its label, other text is kept."""
    options = question.get("options") or []
    if reply.isdigit() and 1 <= int(reply) <= len(options):
        return str(options[int(reply) - 1].get("label", reply))
    return reply


def ask_inline(questions: list[Question], write: Callable[[str], None],
               read: Callable[[str], str]) -> list[dict[str, str]] | None:
    """Ask each question with numbered options; an empty reply (or end of input) dismisses
    them all (None). What the model wrote is shown cleaned (textwidth.clean), answered as
    it was."""
    answers: list[dict[str, str]] = []
    for question in questions:
        header = clean(str(question.get("header", ""))).strip()
        write(f"\n{header + ': ' if header else ''}{clean(str(question.get('question', '')))}\n")
        options = question.get("options") or []
        for n, option in enumerate(options, 1):
            description = clean(str(option.get("description", "") or ""))
            write(f"  {n}. {clean(str(option.get('label', '')))}{' - ' + description if description else ''}\n")
        try:
            reply = read(f"answer [1-{len(options)} or text, empty to dismiss]: ").strip()
        except EOFError:
            return None
        if not reply:
            return None
        answers.append({"question": str(question.get("question", "")), "answer": answer_choice(reply, question)})
    return answers


def run_turn(client: Client, session_id: str, text: str, view: TurnView, interrupts: Interrupts, *,
             ask: Ask | None = None, abandon_on_second: bool = False, approvals: Inbox | None = None,
             approve: Approve | None = None) -> dict[str, Any]:
    """Run one turn to its end, showing its events through `view`; returns
    the turnFinished payload. Raises kward.client.RpcError when `turns/start` is refused,
    ClientClosed when the server ended, TurnAbandoned (see the module docstring)."""

    def wanted(msg: Message) -> bool:
        return msg.get("method") in ("turn/event", "ui/question", "hook/completed")

    with client.subscribe(wanted) as events, interrupts.counting(), _draining(approvals):
        turn = client.start_turn(session_id, text)
        turn_id = turn["id"]
        seen = 0
        canceling = False

        def cancel() -> None:
            nonlocal canceling
            if not canceling:
                canceling = True
                view.note("canceling...")
                try:
                    client.cancel_turn(turn_id)
                except RpcError:
                    pass  # it ended meanwhile: its turnFinished is on the way
            elif abandon_on_second:
                raise TurnAbandoned()

        while True:
            if interrupts.count > seen:
                seen = interrupts.count
                cancel()
            try:
                msg = events.get(POLL)
            except TimeoutError:
                pending = approvals.take() if approvals is not None else None
                if pending is not None:
                    pending.answer(_approval(pending.params, view, approve if not canceling else None, interrupts))
                continue
            params = msg.get("params") or {}
            if msg["method"] == "ui/question":
                if params.get("sessionId") == session_id and not canceling:
                    try:
                        _answer(client, session_id, params, ask, interrupts)
                    except KeyboardInterrupt:
                        seen = interrupts.count
                        cancel()
                continue
            if params.get("turnId") != turn_id:
                continue
            if msg["method"] == "hook/completed":
                view.hook(params)
                continue
            view.event(params)
            if params.get("type") == "turnFinished":
                return params.get("payload") or {}


@contextlib.contextmanager
def _draining(approvals: Inbox | None) -> Iterator[None]:
    try:
        yield
    finally:
        if approvals is not None:
            approvals.drain()


def _approval(params: dict[str, Any], view: TurnView, approve: Approve | None,
              interrupts: Interrupts) -> dict[str, Any]:
    if approve is None:
        return decline("the turn is being canceled")
    with interrupts.raising():
        try:
            return approve(params, view)
        except KeyboardInterrupt:
            view.note("(declined)")
            return decline(CTRL_C)
        finally:
            view.resume()


def _answer(client: Client, session_id: str, params: dict[str, Any], ask: Ask | None,
            interrupts: Interrupts) -> None:
    questions = params.get("questions") or []
    if ask is None:
        answers = None
    else:
        with interrupts.raising():
            answers = ask(questions)
    try:
        client.request("ui/answerQuestion", {"sessionId": session_id,
                                             "questionRequestId": params.get("questionRequestId"),
                                             "answers": answers or []})
    except RpcError:
        pass  # the question was released meanwhile (the turn ended or was canceled)
