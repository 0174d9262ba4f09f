"""Make `bfcl_sample.json.gz` from a checkout of the Berkeley Function Calling Leaderboard data.

Usage: ``python benchmarks/data/make_bfcl_sample.py GORILLA_CHECKOUT``. It reads the question files
and their possible answers under ``berkeley-function-call-leaderboard/bfcl_eval/data/`` (Apache-2.0,
ShishirPatil/gorilla) and writes, gzipped, the catalog (every distinct function of the files named in
`CATALOG`, the first definition of each name kept) and the labelled queries (every single-call question
of `QUERIES` whose answer names one function of the catalog). Function names keep their dots (the
search splits on them); parameter types are mapped to JSON Schema's names (``dict`` -> ``object``...).
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any, cast

CATALOG = (
    "BFCL_v4_simple_python",
    "BFCL_v4_multiple",
    "BFCL_v4_live_simple",
    "BFCL_v4_parallel",
    "BFCL_v4_parallel_multiple",
    "BFCL_v4_irrelevance",
)
QUERIES = ("BFCL_v4_simple_python", "BFCL_v4_multiple", "BFCL_v4_live_simple")
TYPES = {"dict": "object", "float": "number", "tuple": "array", "list": "array", "str": "string", "int": "integer"}


def json_schema(node: Any) -> Any:
    """BFCL's parameter schema with JSON Schema's type names (an ``any`` type is left out)."""
    if isinstance(node, list):
        return [json_schema(item) for item in cast("list[Any]", node)]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in cast("dict[str, Any]", node).items():
        if key == "type" and isinstance(value, str):
            if value != "any":
                out[key] = TYPES.get(value, value)
        elif key == "properties" and isinstance(value, dict):
            out[key] = {name: json_schema(spec) for name, spec in cast("dict[str, Any]", value).items()}
        else:
            out[key] = json_schema(value)
    return out


def main(checkout: Path) -> None:
    """Write the sample beside this script."""
    data = checkout / "berkeley-function-call-leaderboard" / "bfcl_eval" / "data"
    tools: dict[str, dict[str, Any]] = {}
    for stem in CATALOG:
        for line in (data / f"{stem}.json").read_text().splitlines():
            for function in json.loads(line)["function"]:
                parameters = json_schema(function.get("parameters") or {"type": "object", "properties": {}})
                parameters["type"] = "object"
                tools.setdefault(
                    function["name"],
                    {
                        "name": function["name"],
                        "description": function.get("description", ""),
                        "parameters": parameters,
                    },
                )
    queries: list[dict[str, str]] = []
    for stem in QUERIES:
        answers = {
            entry["id"]: entry["ground_truth"]
            for entry in map(json.loads, (data / "possible_answer" / f"{stem}.json").read_text().splitlines())
        }
        for line in (data / f"{stem}.json").read_text().splitlines():
            entry = json.loads(line)
            truth = answers.get(entry["id"], [])
            turns = entry["question"]
            if len(truth) != 1 or len(turns) != 1:
                continue
            (name,) = truth[0]
            user = [m["content"] for m in turns[0] if m["role"] == "user"]
            if name in tools and user:
                queries.append({"id": entry["id"], "query": user[-1], "tool": name})
    sample = {
        "source": "Berkeley Function Calling Leaderboard (BFCL v4), github.com/ShishirPatil/gorilla, "
        "berkeley-function-call-leaderboard/bfcl_eval/data",
        "licence": "Apache-2.0 (the gorilla repository's LICENSE)",
        "tools": list(tools.values()),
        "queries": queries,
    }
    target = Path(__file__).with_name("bfcl_sample.json.gz")
    target.write_bytes(gzip.compress(json.dumps(sample, ensure_ascii=False).encode(), mtime=0))
    print(f"{len(tools)} tools, {len(queries)} queries -> {target} ({target.stat().st_size} bytes)")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
