"""docs/protocol.md's tables against docs/protocol.schema.json, so the two cannot disagree.

The schema is generated from kward/rpc/shapes/ (and validated against every message the RPC
tests exchange); the doc is written by hand. Checked here:

- every method section's params table: the documented param names are the properties of
  the method's params definition (`required` `yes` <-> in the schema's `required`), dotted
  names (`capabilities.experimentalApi`) are properties of the nested object, and the
  types agree coarsely (string, boolean, number, integer, array, object);
- every field table of a result, payload or nested object that maps to one definition
  (FIELD_TABLES): the documented top-level names are its properties, those marked
  optional (`, optional` in the type column, or a name ending in `?`) are the ones not
  required, nested names (`files[].path`) exist, and where the table has a type column
  the types agree coarsely (and `or null` <-> the schema admits null);
- payloads and results written in braces (`{sessionId, turnId?, run}` in the notification
  and event tables, `Result: `{root, basename, writable}`` in a method section): the
  top-level names are the definition's properties, `name?` <-> not required;
- the capability groups table and the memory record table by their names only
  (SOME_NAMES, NAMES_ONLY say why).

- results named in prose ("Result: the session payload"): the method's result is that
  table's definition (PROSE_RESULTS).

Nested braces (`{message}`: `{role, content, ...}`) are not parsed.
"""

import json
import re

import pytest

from lib.paths import REPO
from test_docs import Doc, Table, code_names, first_name

SCHEMA_PATH = REPO / "docs" / "protocol.schema.json"


@pytest.fixture(scope="module")
def doc() -> Doc:
    return Doc(REPO / "docs" / "protocol.md")


@pytest.fixture(scope="module")
def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text())


# Field tables (section heading, first header cell) -> the definition they describe.
FIELD_TABLES = {
    ("`initialize`", "field"): "InitializeResult",
    ("The session payload", "field"): "Session",
    ("`sessions/list`", "field"): "ListedSession",
    ("`sessions/compact`", "field"): "SessionsCompactResult",
    ("The turn object", "field"): "Turn",
    ("`turns/events`", "field"): "TurnsEventsResult",
    ("`runtime/state`", "field"): "RuntimeStateResult",
    ("`runtime/stats`", "field"): "RuntimeStatsResult",
    ("Model entries", "field"): "ModelEntry",
    ("`auth/status`", "field"): "AuthStatusResult",
    ("`auth/providers`", "field"): "AuthProviderCard",
    ("Logins", "field"): "AuthLogin",
    ("`logging/stats`", "field"): "LoggingStatsResult",
    ("The `turn/event` envelope", "field"): "TurnEvent",
    ("Event types", "field"): "TurnEventToolResultPayload",  # toolCall's: the test below
    ("Live tool output (`toolUpdate`)", "field"): "TurnEventToolUpdatePayload",
    ("File changes (`turnDiff` and `sessions/diff`)", "field"): "SessionsDiffResult",
    ("The `tool/requestApproval` request", "param"): "ToolRequestApprovalParams",
    ("Hooks", "field of `run`"): "HookRun",
}

# Tables checked less: their names only (each must be a property; NAMES_ONLY: all of them).
SOME_NAMES = {
    # a selection of the capability groups ("the groups a UI needs most"), what each says in prose
    ("`initialize`", "group"): "Capabilities",
}
NAMES_ONLY = {
    # a memory record's fields by kind (the core and soft columns say which kind has which,
    # so whether a field is always there is not one answer)
    ("Memory", "field"): "MemoryRecord",
}


# --- the schema ---------------------------------------------------------------------------

def definition(schema: dict, name: str) -> dict:
    """A definition, following a `$ref`-only definition (`SessionsCreateResult` -> `Session`)."""
    node = schema["$defs"][name]
    while "$ref" in node and "properties" not in node:
        node = schema["$defs"][node["$ref"].split("/")[-1]]
    return node


def resolve(schema: dict, node: dict) -> dict:
    while "$ref" in node:
        node = schema["$defs"][node["$ref"].split("/")[-1]]
    return node


def json_types(schema: dict, node: dict) -> set[str] | None:
    """The JSON types a property's schema admits; None for anything (free-form)."""
    node = resolve(schema, node)
    if "anyOf" in node or "oneOf" in node:
        found: set[str] = set()
        for sub in node.get("anyOf", node.get("oneOf")):
            types = json_types(schema, sub)
            if types is None:
                return None
            found |= types
        return found
    if "const" in node or "enum" in node:
        values = [node["const"]] if "const" in node else node["enum"]
        return {json_type(v) for v in values}
    if "type" in node:
        return set(node["type"]) if isinstance(node["type"], list) else {node["type"]}
    return None


def json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def object_of(schema: dict, node: dict) -> dict | None:
    """The object definition a property holds (itself, its array's items, a nullable one)."""
    node = resolve(schema, node)
    if "properties" in node:
        return node
    if "items" in node:
        return object_of(schema, node["items"])
    for sub in node.get("anyOf", []):
        found = object_of(schema, sub)
        if found is not None:
            return found
    return None


def nested(schema: dict, top: dict, dotted: str) -> dict | None:
    """The schema of `a.b` / `files[].path` inside `top`, None when the schema has no such nesting."""
    node: dict | None = top
    parts = [p for p in re.split(r"\.|\[\]\.?", dotted) if p]
    for i, part in enumerate(parts):
        holder = node if i == 0 else object_of(schema, node or {})
        if holder is None or part not in holder.get("properties", {}):
            return None
        node = holder["properties"][part]
    return node


# --- the doc ------------------------------------------------------------------------------

def doc_types(cell: str) -> set[str] | None:
    """`string, optional`, `array of strings`, `integer or `null``: the JSON types named (None: none)."""
    cell = cell.replace("`", "").replace(", optional", "").strip()
    words = [part.strip().split()[0] for part in cell.split(" or ") if part.strip()]
    types = set(words)
    return types if types <= {"string", "boolean", "number", "integer", "array", "object", "null"} else None


def types_agree(documented: set[str], actual: set[str]) -> bool:
    """Coarsely: a documented `number` takes an integer too."""
    if "number" in documented:
        actual = {"number" if t == "integer" else t for t in actual}
    return documented == actual


def tables_named(doc: Doc, title: str, first_header: str) -> list[Table]:
    found = [h for h in doc.headings if h.title == title]
    assert len(found) == 1, f"no single heading {title!r}"
    start, end = doc.section(title, found[0].level)
    return [t for t in doc.tables(start, end) if t.header and t.header[0] == first_header]


def method_sections(doc: Doc) -> list[str]:
    return [m.group(1) for h in doc.headings if h.level == 3 for m in [re.fullmatch(r"`([^`]+)`", h.title)] if m]


# --- the checks ---------------------------------------------------------------------------

def params_problems(doc: Doc, schema: dict, method: str) -> list[str]:
    start, end = doc.section(f"`{method}`", 3)
    tables = [t for t in doc.tables(start, end) if t.header and t.header[0] == "param"]
    entry = schema["x-kward-messages"]["request"][method]
    if not tables:
        return []  # no params (test_docs checks the section says so)
    params = definition(schema, entry["params"].split("/")[-1])
    properties, required = params.get("properties", {}), set(params.get("required", []))
    problems, top = [], {}
    for row in tables[0].body:
        name = first_name(row[0])
        if re.search(r"[.\[]", name):
            node = nested(schema, params, name)
            if node is None:
                problems.append(f"{method}: {name} is not in the schema")
                continue
        else:
            top[name] = row
            node = properties.get(name)
            if node is None:
                continue
        documented, actual = doc_types(row[1]), json_types(schema, node)
        if documented is not None and actual is not None and not types_agree(documented - {"null"}, actual - {"null"}):
            problems.append(f"{method}: {name} is {row[1]!r} in the doc, {sorted(actual)} in the schema")
    if set(top) != set(properties):
        problems.append(f"{method}: doc params {sorted(top)}, schema {sorted(properties)}")
    for name, row in top.items():
        if name in properties and (row[2] == "yes") != (name in required):
            problems.append(f"{method}: {name} required {row[2]!r} in the doc; schema required: {name in required}")
    return problems


def test_every_method_has_its_params_in_the_schema(doc, schema):
    assert sorted(method_sections(doc)) == sorted(schema["x-kward-messages"]["request"])


def test_documented_params_are_the_schema_params(doc, schema):
    problems = [p for method in method_sections(doc) for p in params_problems(doc, schema, method)]
    assert problems == [], "\n".join(problems)


def field_problems(doc: Doc, schema: dict, title: str, first_header: str, name: str) -> list[str]:
    tables = tables_named(doc, title, first_header)
    assert len(tables) == 1, f"{title}: {len(tables)} tables headed {first_header!r}"
    table = tables[0]
    top_def = definition(schema, name)
    properties, required = top_def.get("properties", {}), set(top_def.get("required", []))
    typed = len(table.header) > 2 and table.header[1] == "type"
    problems, top = [], {}
    for row in table.body:
        for documented_name in code_names(row[0]):
            optional = documented_name.endswith("?") or (typed and "optional" in row[1])
            field = documented_name.rstrip("?")
            if re.search(r"[.\[]", field):
                if nested(schema, top_def, field) is None:
                    problems.append(f"{title}: {field} is not in {name}")
                continue
            top[field] = optional
            if field not in properties:
                continue
            if typed:
                documented, actual = doc_types(row[1]), json_types(schema, properties[field])
                if documented is not None and actual is not None and not types_agree(documented, actual):
                    problems.append(f"{title}: {field} is {row[1]!r} in the doc, {sorted(actual)} in {name}")
    if set(top) != set(properties):
        problems.append(f"{title}: doc fields {sorted(top)}, {name} {sorted(properties)}")
    for field, optional in top.items():
        if field in properties and optional == (field in required):
            problems.append(f"{title}: {field} {'optional' if optional else 'always there'} in the doc, "
                            f"{'required' if field in required else 'optional'} in {name}")
    return problems


def test_documented_fields_are_the_schema_properties(doc, schema):
    problems = [p for (title, header), name in FIELD_TABLES.items()
                for p in field_problems(doc, schema, title, header, name)]
    assert problems == [], "\n".join(problems)


def test_every_field_table_is_checked_or_listed_as_not(doc):
    """A new field table is mapped to its definition (FIELD_TABLES, or SOME_NAMES / NAMES_ONLY, saying why)."""
    known = set(FIELD_TABLES) | set(SOME_NAMES) | set(NAMES_ONLY)
    found = set()
    for table in doc.tables():
        if table.header and (table.header[0] in ("field", "group") or table.header[0].startswith("field ")
                             or (table.header[0] == "param" and len(table.header) == 2)):
            heading = [h for h in doc.headings if h.line < table.line][-1]
            found.add((heading.title, table.header[0]))
    assert sorted(found - known) == [] and sorted(known - found) == []


def test_the_tool_fields_without_the_result_ones_are_the_tool_call_payload(doc, schema):
    """The tool fields table is `toolResult`'s payload; the rows marked (`toolResult`) are not `toolCall`'s."""
    table = tables_named(doc, "Event types", "field")[0]
    call = {name for row in table.body if not row[1].startswith("(`toolResult`)") for name in code_names(row[0])}
    payload = definition(schema, "TurnEventToolCallPayload")
    assert call == set(payload["properties"]) == set(payload["required"])


# --- payloads written `{a, b?, c: ...}` in the notification and event tables ----------------

def brace_fields(cell: str) -> dict[str, bool] | None:
    """The top-level names of the first `{...}` code span in a cell, each with whether it is
    optional (`name?`); None when the cell has none (prose: "the tool fields (below)")."""
    span = next((c for c in code_names(cell) if c.startswith("{") and c.endswith("}")), None)
    if span is None:
        return None
    items, depth, current = [], 0, ""
    for char in span[1:-1]:
        if char in "{[(":
            depth += 1
        elif char in "}])":
            depth -= 1
        if char == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += char
    items.append(current)
    names = [item.split(":")[0].strip() for item in items if item.strip()]
    return {name.rstrip("?"): name.endswith("?") for name in names if name != "..."}


def payload_problems(schema: dict, what: str, cell: str, name: str) -> list[str]:
    fields = brace_fields(cell)
    if fields is None:
        return []
    node = definition(schema, name)
    properties, required = set(node.get("properties", {})), set(node.get("required", []))
    problems = []
    if set(fields) != properties:
        problems.append(f"{what}: doc {{{', '.join(fields)}}}, {name} {sorted(properties)}")
    problems += [f"{what}: {field} {'optional' if optional else 'always there'} in the doc"
                 for field, optional in fields.items() if field in properties and optional == (field in required)]
    return problems


def def_name(ref: str) -> str:
    return ref.split("/")[-1]


def test_notification_params_and_event_payloads_are_the_schema_ones(doc, schema):
    index = schema["x-kward-messages"]
    problems = []
    table = doc.table_in("Notifications and events", 2, "notification")
    rows = {first_name(row[0]): row[2] for row in table.body}
    assert sorted(rows) == sorted(index["notification"])
    for method, cell in rows.items():
        problems += payload_problems(schema, method, cell, def_name(index["notification"][method]["params"]))
    # those in prose: one event (the envelope table), the login object (the Logins table)
    for method, shown in (("turn/event", "TurnEvent"), ("auth/loginFinished", "AuthLogin")):
        assert definition(schema, def_name(index["notification"][method]["params"])) == definition(schema, shown)
    table = doc.table_in("Event types", 3, "type")
    rows = {first_name(row[0]): row[2] for row in table.body}
    assert sorted(rows) == sorted(index["turnEvent"])
    for event, cell in rows.items():
        payload = def_name(index["turnEvent"][event]["payload"])
        problems += payload_problems(schema, f"turn event {event}", cell, payload)
    table = doc.table_in("Session updates (`session/event`)", 3, "type")
    for row in table.body:
        event = first_name(row[0])
        problems += payload_problems(schema, f"session event {event}", row[2],
                                     def_name(index["sessionEvent"][event]["payload"]))
    assert problems == [], "\n".join(problems)


def test_results_written_in_braces_are_the_schema_results(doc, schema):
    """`Result: `{root, basename, writable}``: the names are the result's properties."""
    index = schema["x-kward-messages"]["request"]
    problems, checked = [], 0
    for method in method_sections(doc):
        start, end = doc.section(f"`{method}`", 3)
        text = " ".join(line for line, fenced in zip(doc.lines[start:end], doc.in_fence[start:end]) if not fenced)
        found = re.search(r"(?:Result:|Answers) (`\{[^`]*\}`)", text)
        if found:
            checked += 1
            problems += payload_problems(schema, f"{method} result", found.group(1), def_name(index[method]["result"]))
    assert checked > 30
    assert problems == [], "\n".join(problems)


def test_the_tables_checked_by_name_only_name_schema_properties(doc, schema):
    problems = []
    for tables, complete in ((SOME_NAMES, False), (NAMES_ONLY, True)):
        for (title, header), name in tables.items():
            [table] = tables_named(doc, title, header)
            top = definition(schema, name)
            names = [n for cell in table.column(0) for n in code_names(cell)]
            problems += [f"{title}: {n} is not in {name}" for n in names if nested(schema, top, n) is None]
            if complete and set(names) != set(top["properties"]):
                problems.append(f"{title}: doc {sorted(names)}, {name} {sorted(top['properties'])}")
    assert problems == [], "\n".join(problems)


# Results named in prose ("Result: the session payload ...") -> the definition of that table.
PROSE_RESULTS = {
    "the session payload": "Session",
    "the change summary": "SessionsDiffResult",
    "the turn object": "Turn",
    "the current model entry": "ModelEntry",
    "the `completed` login object": "AuthLogin",
    "the login object": "AuthLogin",
    "the status": "MemoryStatus",
}


def test_results_named_in_prose_are_the_tables_they_name(doc, schema):
    index = schema["x-kward-messages"]["request"]
    named = {}
    for method in method_sections(doc):
        start, end = doc.section(f"`{method}`", 3)
        text = " ".join(doc.lines[start:end])
        found = re.search(r"Result: (the .*)", text)
        phrase = found and next((p for p in PROSE_RESULTS if found.group(1).startswith(p)), None)
        if phrase:
            named[method] = phrase
            result = definition(schema, def_name(index[method]["result"]))
            assert result == definition(schema, PROSE_RESULTS[phrase]), f"{method}: {phrase}"
    assert len(named) >= 15, named
