"""Write kward/rpc/params_table.py from the shapes (kward.rpc.schema.params_table_source).

    python3 tools/gen_params_table.py          # write it
    python3 tools/gen_params_table.py --check  # exit 1 when it is stale
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kward.rpc.schema import params_table_source  # noqa: E402

TARGET = Path(__file__).resolve().parent.parent / "kward" / "rpc" / "params_table.py"


def main(argv: list[str]) -> int:
    text = params_table_source()
    if "--check" in argv:
        if TARGET.read_text(encoding="utf-8") != text:
            print(f"{TARGET} is stale: run python3 tools/gen_params_table.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
