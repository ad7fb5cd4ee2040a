#!/bin/sh
# tier_check.sh BUILD_DIR TESTING_MD: docs/testing.md's table of entries
# ("## The entries") names exactly this tree's ctest entries, each with the
# tier cmake/HwafTiers.cmake gives it (label `default`, else `full`), and
# every default entry with its time in the reference run; and the default
# tier, at those times, stays within its budgets by 20 %: the reference
# run's wall clock, warm and cold, scaled by the default entries' summed
# time against the sum the reference run had ("Reference run" line of
# "## Tiers").  The ctest entry host.tiers.
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
r = re.search(r"Reference run of the default tier: ([0-9]+) s warm and ([0-9]+) s cold, "
              r"its entries taking ([0-9.]+) s warm in all", tiers)
if not b or not r:
    bad.append("the \"Budgets: ...\" or \"Reference run of the default tier: ...\" line is missing")
if not bad:
    cold_b, warm_b = int(b.group(1)), int(b.group(2))
    warm_r, cold_r, sum_r = int(r.group(1)), int(r.group(2)), float(r.group(3))
    s = sum(rows[n][1] for n in rows if rows[n][0] == "default" and rows[n][1] is not None)
    for what, ref, budget in (("warm", warm_r, warm_b), ("cold", cold_r, cold_b)):
        est = ref * s / sum_r
        print("default tier %s: %.0f s at the table'"'"'s times (reference %d s, budget %d s)" % (what, est, ref, budget))
        if est > 1.2 * budget:
            bad.append("the default tier %s, %.0f s, is over its budget of %d s by more than 20 %%" % (what, est, budget))
for x in bad:
    print("FAIL - " + x)
print("%d entries, %d in the default tier: %s" % (len(tests), sum(1 for t in tests.values() if t == "default"),
      "FAILED" if bad else "passed"))
sys.exit(1 if bad else 0)
' "$doc"
