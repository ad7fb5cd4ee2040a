#!/bin/sh
# tier_check.sh BUILD_DIR TESTING_MD: docs/testing.md's table of entries
# ("## The entries") names exactly this tree's ctest entries, each with the
# tier cmake/HwafTiers.cmake gives it (label `default`, else `full`), and
# every default entry with its time in the reference run; and the default
# tier's entries, at those times, take at most 20 % more than they took in
# the reference run ("Reference run" line of "## Tiers"), and the reference
# run's wall clock scaled by them stays within 20 % of the warm budget.
# The ctest entry host.tiers.
set -eu
build=$1
doc=$2
command -v python3 >/dev/null || { echo "FAIL - python3 not found (tools/deps --test)"; exit 1; }
json=$(ctest --test-dir "$build" --show-only=json-v1) || { echo "FAIL - ctest --show-only failed"; exit 1; }
printf '%s' "$json" | python3 -c '
import json, re, sys
doc = open(sys.argv[1]).read()
tests = {}
for t in json.load(sys.stdin)["tests"]:
    labels = []
    for p in t.get("properties", []):
        if p["name"] == "LABELS":
            labels = p["value"]
    tests[t["name"]] = "default" if "default" in labels else "full"
bad = []
def section(title):
    m = re.search(r"^## " + re.escape(title) + r"\n(.*?)(?=^## |\Z)", doc, re.S | re.M)
    if not m:
        bad.append("no section \"## %s\" in %s" % (title, sys.argv[1]))
        return ""
    return m.group(1)
rows = {}
for line in section("The entries").splitlines():
    m = re.match(r"^\| `([^`]+)` \| (default|full) \| ([0-9.]+|-) \|", line)
    if not m:
        if line.startswith("| `"):
            bad.append("row not of the form | `entry` | default|full | seconds|- | ...: " + line[:80])
        continue
    name, tier, secs = m.groups()
    if name in rows:
        bad.append("%s has two rows" % name)
    rows[name] = (tier, None if secs == "-" else float(secs))
for n in sorted(set(tests) - set(rows)):
    bad.append("%s (%s tier) has no row in the table" % (n, tests[n]))
for n in sorted(set(rows) - set(tests)):
    bad.append("%s has a row but is no ctest entry" % n)
for n in sorted(set(rows) & set(tests)):
    if rows[n][0] != tests[n]:
        bad.append("%s: the table says %s, cmake/HwafTiers.cmake %s" % (n, rows[n][0], tests[n]))
    if tests[n] == "default" and rows[n][1] is None:
        bad.append("%s is in the default tier without its time in the reference run" % n)
tiers = section("Tiers")
b = re.search(r"Budgets: default tier ([0-9]+) s cold and ([0-9]+) s warm", tiers)
r = re.search(r"Reference run of the default tier: ([0-9]+) s, its entries taking ([0-9.]+) s in all", tiers)
if not b or not r:
    bad.append("the \"Budgets: ...\" or \"Reference run of the default tier: ...\" line is missing")
if not bad:
    cold_b, warm_b = int(b.group(1)), int(b.group(2))
    wall_r, sum_r = int(r.group(1)), float(r.group(2))
    s = sum(rows[n][1] for n in rows if rows[n][0] == "default" and rows[n][1] is not None)
    est = wall_r * s / sum_r
    print("default tier: entries %.0f s at the table'"'"'s times (reference %.0f s), about %.0f s of wall clock "
          "(reference %d s; budgets %d s warm, %d s cold)" % (s, sum_r, est, wall_r, warm_b, cold_b))
    if est > 1.2 * warm_b:
        bad.append("the default tier, about %.0f s warm at the table'"'"'s times, is over its warm budget of %d s by more than 20 %%" % (est, warm_b))
    if s > 1.2 * sum_r:
        bad.append("the default tier'"'"'s entries take %.0f s, more than 20 %% over the reference run'"'"'s %.0f s" % (s, sum_r))
for x in bad:
    print("FAIL - " + x)
print("%d entries, %d in the default tier: %s" % (len(tests), sum(1 for t in tests.values() if t == "default"),
      "FAILED" if bad else "passed"))
sys.exit(1 if bad else 0)
' "$doc"
