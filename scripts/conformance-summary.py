#!/usr/bin/env python3
"""Sums up conformance-report.json files (the suite's JSON report) for scripts/conformance-long.sh.

    conformance-summary.py [--markdown] [--json OUT] REPORT.json...

Per scenario and report (one report = one run of the suite, a "round"), from the run THROUGH THE PROXY:
  ops            writes the writers issued through the proxy (every attempt, retries included: the report's
                 "operations" column, len(proxied.ops))
  acked          of those, acknowledged (2xx)
  refused        answered 409 or 412: stale attempts the proxy refused (412 is the S3 backend's stale answer)
  5xx/unknown    answered 5xx or no answer (timeouts, resets): unknown outcomes
  handoffs, faults injected (effective)   as the report says
  stale acc.     stale writes accepted: the checker's STALE_ACK, STALE_READ and STALE_APPLIED violations, plus an
                 independent recount from the ops (an acknowledged write whose token is below one acknowledged
                 before it was sent); the larger of the two is shown
  lost           acknowledged writes lost: the checker's LOST_ACK and FINAL_STATE violations, plus an independent
                 look at the final value (absent although writes were acknowledged, or its token below the highest
                 acknowledged token); the larger is shown
  other          any other violation of the checker (UNKNOWN_VALUE, DISHONEST_REJECTION, TOKEN_*, BAD_HISTORY)
  caught         violations the checker found in the paired CONTROL run (must be > 0 for PASS); the checker lists
                 20 per rule and then "... and N more", which counts N; most are STALE_READ (every sampled read
                 that showed a stale value counts); in brackets the control's stale writes acknowledged (recount)
and the verdict, the reasons and the wall time of the scenario (control + proxied).

Exit code: 0 when no report shows a violation through the proxy, 3 otherwise (a stale write accepted or an
acknowledged write lost would be a correctness bug: stop and look), 2 on unreadable input.
"""
import json
import re
import sys

STALE_RULES = {"STALE_ACK", "STALE_READ", "STALE_APPLIED"}
LOST_RULES = {"LOST_ACK", "FINAL_STATE"}
MORE = re.compile(r"^\.\.\. and (\d+) more$")


def count(violations, rules=None):
    """Violations of these rules (all if None). The checker lists at most 20 per rule and scope, then one entry
    '... and N more': that entry counts N."""
    n = 0
    for v in violations:
        if rules is not None and v["rule"] not in rules:
            continue
        m = MORE.match(v["message"])
        n += int(m.group(1)) if m else 1
    return n


def stale_recount(ops):
    """Acknowledged ops with a token below an op acknowledged before they were invoked (the STALE_ACK rule)."""
    oks = sorted((o for o in ops if o["outcome"] == "OK"), key=lambda o: o["endMs"])
    by_start = sorted(ops, key=lambda o: o["startMs"])
    n, i, highest = 0, 0, None
    for b in by_start:
        while i < len(oks) and oks[i]["endMs"] < b["startMs"]:
            if highest is None or oks[i]["token"] > highest:
                highest = oks[i]["token"]
            i += 1
        if b["outcome"] == "OK" and highest is not None and b["token"] < highest:
            n += 1
    return n


def lost_recount(run):
    """1 if the final value is absent although writes were acknowledged, or its token is below the highest
    acknowledged token; else 0."""
    oks = [o for o in run["ops"] if o["outcome"] == "OK"]
    if not oks:
        return 0
    final = run.get("finalValue")
    if final is None:
        return 1
    tokens = [o["token"] for o in run["ops"] if o["value"] == final]
    if not tokens:
        return 1   # a value nobody wrote (the checker reports UNKNOWN_VALUE)
    return 1 if max(tokens) < max(o["token"] for o in oks) else 0


def summarise(path):
    with open(path, encoding="utf-8") as f:
        report = json.load(f)
    rows = []
    for s in report["scenarios"]:
        p, c = s.get("proxied"), s.get("control")
        row = {"report": path, "target": report["target"], "scenario": s["scenario"], "verdict": s["verdict"],
               "seconds": round(s["seconds"], 1), "reasons": s["reasons"]}
        if p is None:
            row.update(ops=0, acked=0, refused=0, unknown=0, handoffs=0, faults=0, effective=0, stale=0, lost=0,
                       other=0, caught=None, caught_acks=None, violations=[], notes=[])
            rows.append(row)
            continue
        ops = p["ops"]
        vs = p["violations"]
        other_rules = {v["rule"] for v in vs} - STALE_RULES - LOST_RULES
        row.update(
            ops=len(ops),
            acked=sum(1 for o in ops if o["outcome"] == "OK"),
            refused=sum(1 for o in ops if o["status"] in (409, 412)),
            unknown=sum(1 for o in ops if o["outcome"] in ("UNKNOWN", "PENDING")),
            handoffs=p["handoffs"], faults=p["faultsInjected"], effective=p["faultsEffective"],
            stale=max(count(vs, STALE_RULES), stale_recount(ops)),
            lost=max(count(vs, LOST_RULES), lost_recount(p)),
            other=count(vs, other_rules),
            caught=None if c is None else count(c["violations"]),
            caught_acks=None if c is None else stale_recount(c["ops"]),
            violations=p["violations"], notes=p["notes"])
        rows.append(row)
    return rows


def caught(r):
    return "-" if r["caught"] is None else f"{r['caught']} ({r['caught_acks']})"


KEYS = ("ops", "acked", "refused", "unknown", "handoffs", "faults", "effective", "stale", "lost", "other")


def main(argv):
    markdown, out, paths = False, None, []
    i = 0
    while i < len(argv):
        if argv[i] == "--markdown":
            markdown = True
        elif argv[i] == "--json":
            i += 1
            out = argv[i]
        else:
            paths.append(argv[i])
        i += 1
    try:
        rows = [r for p in paths for r in summarise(p)]
    except (OSError, ValueError, KeyError) as e:
        print(f"conformance-summary: cannot read the reports: {e}", file=sys.stderr)
        return 2
    total = {k: sum(r[k] for r in rows) for k in KEYS}
    total["seconds"] = round(sum(r["seconds"] for r in rows), 1)
    total["caught"] = sum(r["caught"] or 0 for r in rows)
    total["caught_acks"] = sum(r["caught_acks"] or 0 for r in rows)
    verdicts = {}
    for r in rows:
        verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
    total["verdicts"] = verdicts
    if out:
        with open(out, "w", encoding="utf-8") as f:
            json.dump({"total": total, "scenarios": [{k: v for k, v in r.items() if k != "violations"}
                                                     | {"violations": len(r["violations"])} for r in rows]},
                      f, indent=2)
    if markdown:
        print("| round | scenario | operations | acked | stale refused (409/412) | 5xx/unknown | handoffs "
              "| faults (effective) | stale accepted | ack. lost | other violations | control caught (stale acks) "
              "| verdict | wall s |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
        for r in rows:
            rnd = r["report"].rsplit("/", 2)[-2] if "/" in r["report"] else r["report"]
            print(f"| {rnd} | {r['scenario']} | {r['ops']} | {r['acked']} | {r['refused']} | {r['unknown']} "
                  f"| {r['handoffs']} | {r['faults']} ({r['effective']}) | {r['stale']} | {r['lost']} "
                  f"| {r['other']} | {caught(r)} | {r['verdict']} "
                  f"| {r['seconds']} |")
        print(f"| **total** | | **{total['ops']}** | {total['acked']} | **{total['refused']}** | "
              f"{total['unknown']} | {total['handoffs']} | {total['faults']} ({total['effective']}) | "
              f"**{total['stale']}** | **{total['lost']}** | {total['other']} | "
              f"{total['caught']} ({total['caught_acks']}) | "
              f"{', '.join(f'{v} {k}' for k, v in sorted(verdicts.items()))} | {total['seconds']} |")
    else:
        fmt = "%-8s %-14s %6s %6s %8s %7s %8s %11s %6s %5s %6s %14s %-12s %7s"
        print(fmt % ("round", "scenario", "ops", "acked", "refused", "unknown", "handoffs", "faults(eff)",
                     "stale", "lost", "other", "caught", "verdict", "wall s"))
        for r in rows:
            rnd = r["report"].rsplit("/", 2)[-2] if "/" in r["report"] else r["report"]
            print(fmt % (rnd, r["scenario"], r["ops"], r["acked"], r["refused"], r["unknown"], r["handoffs"],
                         f"{r['faults']}({r['effective']})", r["stale"], r["lost"], r["other"],
                         caught(r).replace(" ", ""), r["verdict"], r["seconds"]))
        print(fmt % ("total", "", total["ops"], total["acked"], total["refused"], total["unknown"],
                     total["handoffs"], f"{total['faults']}({total['effective']})", total["stale"], total["lost"],
                     total["other"], f"{total['caught']}({total['caught_acks']})", "", total["seconds"]))
    bad = [r for r in rows if r["violations"] or r["stale"] or r["lost"] or r["verdict"] == "FAIL"]
    for r in rows:
        if r["reasons"]:
            print(f"{r['report']}: {r['scenario']} {r['verdict']}: " + "; ".join(r["reasons"]), file=sys.stderr)
    for r in bad:
        print(f"VIOLATION in {r['report']}, scenario {r['scenario']}:", file=sys.stderr)
        for v in r["violations"]:
            print(f"  {v['rule']} on {v['scope']}: {v['message']} (ops {v['ops']})", file=sys.stderr)
    return 3 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
