package io.stockade.conformance.report;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

import io.stockade.conformance.ScenarioResult;
import io.stockade.conformance.Verdict;
import io.stockade.conformance.check.History;
import io.stockade.conformance.check.HistoryChecker;
import io.stockade.conformance.run.RunResult;

import org.jspecify.annotations.Nullable;

/** The console table, the JSON report (with every history) and JUnit XML. */
public final class Reports {

    private Reports() {
    }

    /** One line per scenario: scenario, backend, operations, handoffs, faults, control, verdict. */
    public static String table(List<ScenarioResult> results) {
        StringBuilder b = new StringBuilder();
        String fmt = "%-14s %-14s %10s %9s %13s %-16s %s%n";
        b.append(String.format(Locale.ROOT, fmt, "scenario", "backend", "operations", "handoffs", "faults(eff)",
                "control", "verdict"));
        for (ScenarioResult r : results) {
            RunResult p = r.proxied();
            String control = r.control() == null ? "-" : r.control().check().ok() ? "no stale write"
                    : "caught (" + r.control().check().details().size() + ")";
            b.append(String.format(Locale.ROOT, fmt, r.scenario().id(), r.backend(),
                    p == null ? "-" : p.history().ops().size(), p == null ? "-" : p.handoffs(),
                    p == null ? "-" : p.faultsInjected() + "(" + p.faultsEffective() + ")", control, r.verdict()));
        }
        return b.toString();
    }

    /**
     * A run's counts: {@code requests} (every request sent, retries included), {@code writes} (distinct values),
     * {@code acknowledged} (2xx), {@code refusedStale} (409/412), {@code refusedOther} (other 4xx),
     * {@code unknown} (timeout, reset, 5xx, no answer), {@code retries}, {@code reads} (direct reads of the storage),
     * {@code handoffs}, {@code faults}, {@code faultsEffective}, {@code violations}.
     */
    public static Map<String, Long> counts(RunResult r) {
        Map<String, Long> c = new LinkedHashMap<>();
        List<History.Op> ops = r.history().ops();
        long writes = ops.stream().map(History.Op::value).distinct().count();
        c.put("requests", (long) ops.size());
        c.put("writes", writes);
        c.put("acknowledged", ops.stream().filter(o -> o.outcome() == History.Outcome.OK).count());
        c.put("refusedStale", ops.stream().filter(o -> o.outcome() == History.Outcome.FAIL
                && (o.status() == 409 || o.status() == 412)).count());
        c.put("refusedOther", ops.stream().filter(o -> o.outcome() == History.Outcome.FAIL
                && o.status() != 409 && o.status() != 412).count());
        c.put("unknown", ops.stream().filter(o -> o.outcome() != History.Outcome.OK
                && o.outcome() != History.Outcome.FAIL).count());
        c.put("retries", ops.size() - writes);
        c.put("reads", (long) r.history().reads().size());
        c.put("handoffs", (long) r.handoffs());
        c.put("faults", (long) r.faultsInjected());
        c.put("faultsEffective", (long) r.faultsEffective());
        c.put("violations", (long) r.check().details().size());
        return c;
    }

    /**
     * One readable line per scenario for the console: the verdict, what went through the proxy, what the control
     * saw, the time, and on anything but PASS the reasons (and the first violation).
     */
    public static String line(ScenarioResult r) {
        StringBuilder b = new StringBuilder(r.scenario().id()).append(" on ").append(r.backend()).append(": ")
                .append(r.verdict());
        if (r.proxied() != null) {
            Map<String, Long> p = counts(r.proxied());
            b.append(String.format(Locale.ROOT, " | through the proxy: %d requests (%d acknowledged, %d refused as "
                            + "stale, %d refused otherwise, %d unknown), %d handoff(s), %d fault(s), %d effective, "
                            + "%d violation(s)", p.get("requests"), p.get("acknowledged"), p.get("refusedStale"),
                    p.get("refusedOther"), p.get("unknown"), p.get("handoffs"), p.get("faults"),
                    p.get("faultsEffective"), p.get("violations")));
        }
        if (r.control() != null) {
            Map<String, Long> c = counts(r.control());
            b.append(String.format(Locale.ROOT, " | control: %d requests (%d acknowledged), %s",
                    c.get("requests"), c.get("acknowledged"), r.control().check().ok() ? "no stale write seen"
                            : "caught " + c.get("violations") + " violation(s)"));
        }
        b.append(String.format(Locale.ROOT, " | %.1f s", r.seconds()));
        if (r.verdict() != Verdict.PASS && !r.reasons().isEmpty()) {
            b.append(" | because: ").append(String.join("; ", r.reasons()));
        }
        if (r.proxied() != null && !r.proxied().check().details().isEmpty()) {
            HistoryChecker.Violation v = r.proxied().check().details().getFirst();
            b.append(" | first violation: ").append(v.rule()).append(": ").append(v.message());
        }
        return b.toString();
    }

    /** The overall verdict: PASS when every scenario that ran passed, FAIL when one failed, else INCONCLUSIVE. */
    public static Verdict overall(List<ScenarioResult> results) {
        boolean ran = results.stream().anyMatch(r -> r.verdict() != Verdict.SKIPPED);
        if (results.stream().anyMatch(r -> r.verdict() == Verdict.FAIL)) {
            return Verdict.FAIL;
        }
        return ran && results.stream().allMatch(r -> r.verdict() == Verdict.PASS || r.verdict() == Verdict.SKIPPED)
                ? Verdict.PASS : Verdict.INCONCLUSIVE;
    }

    /**
     * The summary line: overall verdict, how many scenarios passed, the target, and (with {@code info}) the
     * Stockade build, the date and the wall time. E.g. {@code PASS: 2 of 2 scenarios passed against postgres
     * (PASS 2) — Stockade 0.1.0 (commit 1a2b…), 2026-12-02T05:00:00Z, 41 s}.
     */
    public static String summary(String target, @Nullable RunInfo info, List<ScenarioResult> results) {
        long ran = results.stream().filter(r -> r.verdict() != Verdict.SKIPPED).count();
        long passed = results.stream().filter(r -> r.verdict() == Verdict.PASS).count();
        StringBuilder per = new StringBuilder();
        for (Verdict v : Verdict.values()) {
            long n = results.stream().filter(r -> r.verdict() == v).count();
            if (n > 0) {
                per.append(per.isEmpty() ? "" : ", ").append(v).append(' ').append(n);
            }
        }
        String s = overall(results) + ": " + passed + " of " + ran + " scenario(s) passed against " + target + " ("
                + per + ")";
        if (info != null) {
            s += String.format(Locale.ROOT, " — Stockade %s (commit %s), %s, %.0f s", info.stockade(),
                    info.commit(), info.started(), info.seconds());
        }
        return s;
    }

    /** The reasons and violations of every scenario that did not pass. */
    public static String details(List<ScenarioResult> results) {
        StringBuilder b = new StringBuilder();
        for (ScenarioResult r : results) {
            if (r.reasons().isEmpty() && (r.proxied() == null || r.proxied().check().ok())) {
                continue;
            }
            b.append("\n").append(r.scenario().id()).append(" on ").append(r.backend()).append(": ")
                    .append(r.verdict()).append("\n");
            r.reasons().forEach(x -> b.append("  - ").append(x).append("\n"));
            if (r.proxied() != null) {
                r.proxied().notes().forEach(x -> b.append("  note: ").append(x).append("\n"));
                if (!r.proxied().check().ok()) {
                    b.append("  ").append(r.proxied().check()).append("\n");
                }
            }
            if (r.control() != null) {
                r.control().notes().forEach(x -> b.append("  control note: ").append(x).append("\n"));
            }
        }
        return b.toString();
    }

    /** The whole suite as JSON: per scenario the verdict, both runs, their violations and histories. */
    public static String json(String target, List<ScenarioResult> results) {
        return json(target, null, results);
    }

    /**
     * The whole suite as JSON: the summary line, the run's facts ({@code info}: date, Stockade and suite builds,
     * target, proxy, storage, control, request, lease provider and TTL, durations; null: left out), and per scenario
     * the verdict, the reasons, both runs with their counts, violations and histories.
     */
    public static String json(String target, @Nullable RunInfo info, List<ScenarioResult> results) {
        Json j = new Json();
        j.open('{').field("target").str(target).field("summary").str(summary(target, info, results))
                .field("verdict").str(overall(results).name());
        if (info != null) {
            j.field("info").open('{').field("started").str(info.started().toString())
                    .field("seconds").num(info.seconds())
                    .field("stockade").open('{').field("version").str(info.stockade())
                    .field("commit").str(info.commit()).close('}')
                    .field("suite").open('{').field("version").str(info.suiteVersion())
                    .field("commit").str(info.suiteCommit()).close('}')
                    .field("proxy").str(info.proxy()).field("write").str(info.write())
                    .field("storage").str(info.storage()).field("control").str(info.control())
                    .field("lease").open('{').field("provider").str(info.leaseProvider())
                    .field("ttlMs").num(info.ttl().toMillis()).close('}')
                    .field("writers").num(info.writers()).field("runDurationMs").num(info.runDuration().toMillis())
                    .close('}');
        }
        j.field("scenarios").open('[');
        for (ScenarioResult r : results) {
            j.open('{').field("scenario").str(r.scenario().id()).field("backend").str(r.backend())
                    .field("verdict").str(r.verdict().name()).field("seconds").num(r.seconds())
                    .field("reasons").open('[');
            r.reasons().forEach(j::str);
            j.close(']').field("proxied");
            run(j, r.proxied());
            j.field("control");
            run(j, r.control());
            j.close('}');
        }
        return j.close(']').close('}').toString();
    }

    private static void run(Json j, @Nullable RunResult r) {
        if (r == null) {
            j.raw("null");
            return;
        }
        long origin = r.history().origin();
        j.open('{').field("key").str(r.key()).field("finalValue").str(r.finalValue()).field("counts").open('{');
        counts(r).forEach((k, v) -> j.field(k).num(v));
        j.close('}')
                .field("handoffs").num(r.handoffs()).field("faultsInjected").num(r.faultsInjected())
                .field("faultsEffective").num(r.faultsEffective()).field("exposedOps").num(r.exposedOps())
                .field("ok").raw(Boolean.toString(r.check().ok())).field("notes").open('[');
        r.notes().forEach(j::str);
        j.close(']').field("violations").open('[');
        for (HistoryChecker.Violation v : r.check().details()) {
            j.open('{').field("rule").str(v.rule()).field("scope").str(v.scope()).field("message").str(v.message())
                    .field("ops").open('[');
            v.ops().forEach(o -> j.num(o.id()));
            j.close(']').close('}');
        }
        j.close(']').field("ops").open('[');
        for (History.Op o : r.history().ops()) {
            j.open('{').field("id").num(o.id()).field("holder").str(o.holder()).field("token").num(o.token())
                    .field("value").str(o.value()).field("outcome").str(o.outcome().name())
                    .field("status").num(o.status()).field("startMs").num((o.startNanos() - origin) / 1e6)
                    .field("endMs").raw(o.endNanos() == Long.MAX_VALUE ? "null"
                            : Json.number((o.endNanos() - origin) / 1e6));
            if (o.why() != null) {
                j.field("why").str(o.why());
            }
            j.close('}');
        }
        j.close(']').field("faults").open('[');
        for (RunResult.FaultWindow f : r.faultWindows()) {
            j.open('{').field("holder").str(f.holder()).field("startMs").num((f.startNanos() - origin) / 1e6)
                    .field("endMs").raw(f.endNanos() <= 0 ? "null" : Json.number((f.endNanos() - origin) / 1e6))
                    .close('}');
        }
        j.close(']').field("reads").open('[');
        for (History.Read rd : r.history().reads()) {
            j.open('{').field("startMs").num((rd.startNanos() - origin) / 1e6)
                    .field("endMs").num((rd.endNanos() - origin) / 1e6).field("value").str(rd.value()).close('}');
        }
        j.close(']').close('}');
    }

    /**
     * The HTML report: one self-contained file (no network, no other file) with the JSON report inside and a
     * timeline per scenario and run, drawn by the page's own script: each lease session as a bar, each write as a
     * mark coloured by its outcome, each fault's interval shaded, and the writes of a violation (the control's
     * stale write landing) ringed.
     */
    public static String html(String target, List<ScenarioResult> results) {
        return html(target, null, results);
    }

    /** As {@link #html(String, List)}, with the summary, the run's facts and a table of counts on top. */
    public static String html(String target, @Nullable RunInfo info, List<ScenarioResult> results) {
        String template;
        try (InputStream in = Reports.class.getResourceAsStream("report.html")) {
            template = new String(Objects.requireNonNull(in, "report.html").readAllBytes(),
                    StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        // Inside <script>, "</" could end the element early: JSON allows "<\/" for it.
        String json = json(target, info, results).replace("</", "<\\/");
        return template.replace("__TITLE__", xml(target)).replace("__SUMMARY__", ReportHeader.html(target, info,
                results)).replace("__REPORT__", json);
    }

    /** JUnit XML: one test case per scenario, failed or skipped unless it passed. */
    public static String junitXml(String target, List<ScenarioResult> results) {
        return junitXml(target, null, results);
    }

    /**
     * JUnit XML: one test case per scenario, failed or skipped unless it passed; with {@code info}, the suite's
     * properties carry the summary line, the date and the Stockade version and commit.
     */
    public static String junitXml(String target, @Nullable RunInfo info, List<ScenarioResult> results) {
        long failures = results.stream().filter(r -> r.verdict() == Verdict.FAIL).count();
        long errors = results.stream().filter(r -> r.verdict() == Verdict.INCONCLUSIVE)
                .count();
        long skipped = results.stream().filter(r -> r.verdict() == Verdict.SKIPPED).count();
        double time = results.stream().mapToDouble(ScenarioResult::seconds).sum();
        StringBuilder b = new StringBuilder("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        b.append(String.format(Locale.ROOT,
                "<testsuite name=\"stockade-conformance %s\" tests=\"%d\" failures=\"%d\" errors=\"%d\" "
                        + "skipped=\"%d\" time=\"%.3f\">%n", xml(target), results.size(), failures, errors, skipped,
                time));
        if (info != null) {
            b.append("  <properties>\n");
            for (String[] p : new String[][] {{"summary", summary(target, info, results)},
                    {"started", info.started().toString()}, {"stockade.version", info.stockade()},
                    {"stockade.commit", info.commit()}, {"lease.provider", info.leaseProvider()},
                    {"lease.ttl-ms", Long.toString(info.ttl().toMillis())}, {"storage", info.storage()}}) {
                b.append("    <property name=\"").append(p[0]).append("\" value=\"").append(xml(p[1]))
                        .append("\"/>\n");
            }
            b.append("  </properties>\n");
        }
        for (ScenarioResult r : results) {
            b.append(String.format(Locale.ROOT, "  <testcase classname=\"conformance.%s\" name=\"%s\" time=\"%.3f\">",
                    xml(r.backend()), xml(r.scenario().id()), r.seconds()));
            String detail = xml(String.join("; ", r.reasons()) + (r.proxied() != null && !r.proxied().check().ok()
                    ? "\n" + r.proxied().check() : ""));
            switch (r.verdict()) {
                case FAIL -> b.append("\n    <failure message=\"stale write or lost write\">").append(detail)
                        .append("</failure>\n  ");
                case INCONCLUSIVE -> b.append("\n    <error message=\"inconclusive\">").append(detail)
                        .append("</error>\n  ");
                case SKIPPED -> b.append("\n    <skipped message=\"").append(detail).append("\"/>\n  ");
                case PASS -> {
                }
            }
            b.append("</testcase>\n");
        }
        return b.append("</testsuite>\n").toString();
    }

    static String xml(String s) {
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
    }
}
