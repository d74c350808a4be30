package io.stockade.conformance.report;

import java.util.List;
import java.util.Locale;
import java.util.Map;

import io.stockade.conformance.ScenarioResult;
import io.stockade.conformance.run.RunResult;

import org.jspecify.annotations.Nullable;

/**
 * The top of the HTML report, written on the server side (readable without the page's script, and by a test that
 * only greps the file): the summary line, the run's facts and a table of counts per scenario and run.
 */
final class ReportHeader {

    private static final List<String> COUNTS = List.of("requests", "acknowledged", "refusedStale", "refusedOther",
            "unknown", "retries", "reads", "handoffs", "faults", "faultsEffective", "violations");
    /** The counts' column headers, short enough for the table to fit a laptop's 1280 px (the name in a title). */
    private static final Map<String, String> HEADERS = Map.ofEntries(Map.entry("requests", "requests"),
            Map.entry("acknowledged", "acked"), Map.entry("refusedStale", "stale"),
            Map.entry("refusedOther", "refused"), Map.entry("unknown", "unknown"), Map.entry("retries", "retries"),
            Map.entry("reads", "reads"), Map.entry("handoffs", "handoffs"), Map.entry("faults", "faults"),
            Map.entry("faultsEffective", "effective"), Map.entry("violations", "violations"));

    private ReportHeader() {
    }

    static String html(String target, @Nullable RunInfo info, List<ScenarioResult> results) {
        StringBuilder b = new StringBuilder();
        b.append("<p id=\"summary\" class=\"summary ").append(Reports.overall(results)).append("\">")
                .append(Reports.xml(Reports.summary(target, info, results))).append("</p>\n");
        if (info != null) {
            b.append("<table id=\"facts\" class=\"facts\">\n");
            row(b, "date", info.started().toString());
            row(b, "Stockade", info.stockade() + " (commit " + info.commit() + ")");
            row(b, "suite", info.suiteVersion() + " (commit " + info.suiteCommit() + ")");
            row(b, "target", info.target());
            row(b, "proxy", info.proxy());
            row(b, "write", info.write());
            row(b, "storage (read back)", info.storage());
            row(b, "control", info.control());
            row(b, "lease provider", info.leaseProvider());
            row(b, "lease TTL", info.ttl().toMillis() + " ms");
            row(b, "writers", Integer.toString(info.writers()));
            row(b, "duration", String.format(Locale.ROOT, "%.1f s (each run's fault budget %d ms)",
                    info.seconds(), info.runDuration().toMillis()));
            b.append("</table>\n");
        }
        b.append("<table id=\"counts\" class=\"counts\">\n<tr><th>scenario</th><th>verdict</th><th>run</th>");
        COUNTS.forEach(c -> b.append("<th title=\"").append(c).append("\">").append(HEADERS.get(c)).append("</th>"));
        b.append("<th>seconds</th></tr>\n");
        for (ScenarioResult r : results) {
            runRow(b, r, "proxy", r.proxied());
            runRow(b, r, "control", r.control());
        }
        return b.append("</table>\n").toString();
    }

    private static void runRow(StringBuilder b, ScenarioResult r, String which, @Nullable RunResult run) {
        if (run == null && which.equals("control")) {
            return;
        }
        b.append("<tr data-counts=\"").append(Reports.xml(r.scenario().id())).append('/').append(which)
                .append("\"><td>").append(Reports.xml(r.scenario().id())).append("</td><td><span class=\"verdict ")
                .append(r.verdict()).append("\">").append(r.verdict()).append("</span></td><td>").append(which)
                .append("</td>");
        Map<String, Long> c = run == null ? Map.of() : Reports.counts(run);
        COUNTS.forEach(k -> b.append("<td>").append(c.containsKey(k) ? c.get(k).toString() : "-").append("</td>"));
        b.append(String.format(Locale.ROOT, "<td>%.1f</td></tr>\n", r.seconds()));
        if (which.equals("proxy") && !r.reasons().isEmpty()) {   // a row of their own, across the table
            b.append("<tr class=\"reasons\"><td colspan=\"").append(COUNTS.size() + 4).append("\">")
                    .append(Reports.xml(String.join("; ", r.reasons()))).append("</td></tr>\n");
        }
    }

    private static void row(StringBuilder b, String name, String value) {
        b.append("<tr><th>").append(Reports.xml(name)).append("</th><td>").append(Reports.xml(String.valueOf(value)))
                .append("</td></tr>\n");
    }
}
