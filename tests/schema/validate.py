#!/usr/bin/python3
"""Validates summary.json and `gpuwatch diff --json` documents against docs/summary.schema.json.

    validate.py SCHEMA PATH...     PATH: a document (*.json), or a folder whose *.json are all
                                   checked (missing: nothing to check)

The schema's `schema` key picks the entry point (#/$defs/summary or #/$defs/diff). Prints
each invalid document with its first errors (where, and what) and exits 1 if any is invalid;
a folder with no documents is not an error (no test read any). Debian's python3-jsonschema
(scripts/setup.sh); run with /usr/bin/python3.
"""
import json
import os
import sys

import jsonschema

MAX_ERRORS = 8  # per document: enough to see a pattern, short enough to read


def validator(schema_path):
    with open(schema_path) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def where(error):
    return "/" + "/".join(str(p) for p in error.absolute_path)


def errors_of(v, doc):
    """The errors worth reading: the deepest of each branch (an anyOf's own message says little)."""
    out = []
    for e in sorted(v.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path))):
        leaves = [e]
        while any(x.context for x in leaves):
            leaves = [c for x in leaves for c in (x.context or [x])]
        best = jsonschema.exceptions.best_match(leaves) if len(leaves) > 1 else leaves[0]
        out.append(f"{where(best)}: {best.message[:300]}")
    return out


def documents(paths):
    for p in paths:
        if not p.endswith(".json") and not os.path.exists(p):
            continue  # a folder no test wrote into
        if os.path.isdir(p):
            for name in sorted(os.listdir(p)):
                if name.endswith(".json"):
                    yield os.path.join(p, name)
        else:
            yield p


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    v = validator(argv[1])
    checked = bad = 0
    for path in documents(argv[2:]):
        with open(path) as f:
            doc = json.load(f)
        checked += 1
        errs = errors_of(v, doc)
        if errs:
            bad += 1
            print(f"{path}: {len(errs)} error(s)")
            for e in errs[:MAX_ERRORS]:
                print("  " + e)
    print(f"{checked} document(s) checked, {bad} invalid")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
