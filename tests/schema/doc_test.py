#!/usr/bin/python3
"""docs/summary.schema.json and the documents that explain it name the same keys.

    doc_test.py SCHEMA SUMMARY_MD DIFF_MD

summary.json (docs/summary-schema.md): every key the schema allows is written in backticks
in the section that documents it (the section whose heading names the key's parent, e.g.
`memcpy`, `collectives.by_comm[]`, `findings` for every finding's evidence, or an enclosing
one), and every key in the first column of a section's table is a key of the schema there.
Finding ids: the schema's list and the document's are the same. The diff's JSON
(docs/diff.md, "--json"): every key of #/$defs/diff is in that section, every key of its
table is one of the diff's top-level keys.
"""
import json
import re
import sys

TICKED = re.compile(r"`([^`]+)`")
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def words(text):
    """Identifiers written inside backticks."""
    return {w for span in TICKED.findall(text) for w in WORD.findall(span)}


def sections(md):
    """[(key path or None, heading level, text)], a section running to the next heading."""
    out, key, level, lines = [], None, 0, []
    for line in md.splitlines():
        m = re.match(r"^(#{1,4}) (.*)$", line)
        if m:
            out.append((key, level, "\n".join(lines)))
            level, heading = len(m.group(1)), m.group(2)
            t = re.match(r"^`([^`]+)`", heading)
            key = tuple(t.group(1).replace("[]", "").split(".")) if t else (() if heading == "Top level" else None)
            if key and len(key) > 1 and key[0] in ("ranks", "job"):  # `job.verdict`: as `verdict`
                key = key[1:]
            lines = [line]
        else:
            lines.append(line)
    out.append((key, level, "\n".join(lines)))
    return out


def table_keys(text):
    """Backticked keys of the first column of the section's tables headed `| key |`."""
    keys, in_table = [], False
    for line in text.splitlines():
        if line.startswith("| key |"):
            in_table = True
        elif not line.startswith("|"):
            in_table = False
        elif in_table and not line.startswith("|---"):
            keys += TICKED.findall(line.split("|")[1])
    return keys


class Schema:
    def __init__(self, schema):
        self.schema = schema

    def resolve(self, s):
        while isinstance(s, dict) and "$ref" in s:
            s = self.schema["$defs"][s["$ref"].split("/")[-1]]
        return s

    def properties(self, s, path=(), depth=0):
        """(path of the parent object, key) of every property under s; array items and map
        values add '*' to the path."""
        s = self.resolve(s)
        if not isinstance(s, dict) or depth > 40:
            return
        for k, sub in s.get("properties", {}).items():
            yield path, k
            yield from self.properties(sub, path + (k,), depth + 1)
        for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            for sub in s.get(key, []):
                yield from self.properties(sub, path + (("*",) if key == "prefixItems" else ()), depth + 1)
        for key in ("if", "then", "else"):
            if key in s and key != "if":
                yield from self.properties(s[key], path, depth + 1)
        for key in ("items", "additionalProperties"):
            if isinstance(s.get(key), dict):
                yield from self.properties(s[key], path + ("*",), depth + 1)


def scope(path):
    """A schema path as the document's headings name it: no array marks, no leading ranks/job."""
    p = tuple(x for x in path if x != "*")
    return p[1:] if p[:1] in (("ranks",), ("job",)) else p


def check_summary(schema, md):
    failures = []
    secs = [(k, t) for k, _, t in sections(md) if k is not None]
    by_key = {}
    for k, t in secs:
        by_key.setdefault(k, []).append(t)

    def direct(path, k):
        s = scope(path)
        out = [t for key, ts in by_key.items() for t in ts if key and (s[:len(key)] == key or key == s + (k,))]
        if not s:
            out += by_key.get(tuple(x for x in path if x != "*")[:1], []) + by_key.get((), [])
        return out

    def candidates(path, k):
        """The sections that may document key k of the object at `path`: those headed by a
        path the object lies under, the one headed by the key itself, for the rank and job
        objects their own sections and the top level's; and those of every enclosing object
        (a key listed inline where its parent is described)."""
        out = direct(path, k)
        while path:
            path = path[:-1]
            while path and path[-1] == "*":
                path = path[:-1]
            if path:
                out += direct(path[:-1], path[-1])
        return out

    entry = schema.schema["$defs"]["summary"]
    props = list(schema.properties(entry))
    for path, k in sorted(set(props)):
        if not any(k in words(t) for t in candidates(path, k)):
            failures.append(f"summary.json key {'/'.join(path + (k,))} is not in docs/summary-schema.md"
                            f" (looked in the sections of {'.'.join(scope(path) + (k,))})")

    # Table keys: each a key of the schema under the section's path, or beside it.
    known = {}
    for path, k in props:
        known.setdefault(tuple(x for x in path if x != "*"), set()).add(k)

    def under(key):
        out = set()
        for p, ks in known.items():
            rel = p[1:] if p[:1] in (("ranks",), ("job",)) else p
            if p[:len(key)] == key or (key and rel[:len(key)] == key) or rel == key[:-1]:
                out |= ks
        return out

    for key, text in secs:
        allowed = under(key)
        for cell in table_keys(text):
            for k in WORD.findall(cell):
                if k not in allowed:
                    failures.append(f"docs/summary-schema.md section {'.'.join(key) or 'Top level'}: "
                                    f"key `{k}` is not in the schema there")

    # Finding ids.
    ids = set(schema.resolve(schema.schema["$defs"]["finding"])["properties"]["id"]["enum"])
    doc_ids = set()
    for key, text in secs:
        if key == ("findings",):
            evidence_table = False
            for line in text.splitlines():
                if line.startswith("| id | time lost |"):
                    evidence_table = True
                elif not line.startswith("|"):
                    evidence_table = False
                m = re.match(r"^\| `([a-z_]+)` \|", line)
                if m and evidence_table:
                    doc_ids.add(m.group(1))
    for i in sorted(ids ^ doc_ids):
        failures.append(f"finding id `{i}`: in {'the schema' if i in ids else 'the document'} only")
    return failures


def check_diff(schema, md):
    text = md.split("## `--json`", 1)[1].split("\n## ", 1)[0]
    failures = []
    entry = schema.schema["$defs"]["diff"]
    props = set(schema.properties(entry))
    ws = words(text)
    for path, k in sorted(props):
        if k not in ws:
            failures.append(f"diff JSON key {'/'.join(path + (k,))} is not in docs/diff.md's --json section")
    top = {k for p, k in props if p == ()}
    for line in text.splitlines():
        if line.startswith("| `"):
            for k in TICKED.findall(line.split("|")[1]):
                if k not in top:
                    failures.append(f"docs/diff.md --json table: `{k}` is not a key of the diff's JSON")
    return failures


def main(schema_path, summary_md, diff_md):
    with open(schema_path) as f:
        schema = Schema(json.load(f))
    with open(summary_md) as f:
        failures = check_summary(schema, f.read())
    with open(diff_md) as f:
        failures += check_diff(schema, f.read())
    for x in failures:
        print("FAIL: " + x)
    print(f"{len(failures)} disagreement(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
