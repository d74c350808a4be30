package io.stockade.conformance;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.stockade.conformance.check.History;
import io.stockade.conformance.check.HistoryChecker;
import io.stockade.conformance.report.Reports;
import io.stockade.conformance.report.RunInfo;
import io.stockade.conformance.run.RunResult;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 49: the HTML report at a laptop's 1400 px overflowed (the counts table), grew rows 150-300 px tall and cut
 * the writers' labels. A report shaped as a real lease run makes it (Redis-sized tokens, long writer names, every
 * scenario, long reasons and notes, every fact) is drawn by headless chromium in a 1280 px window: the page is no
 * wider than the window, a row of counts is one line, a row of reasons at most four, and no writer's label reaches
 * its bars.
 */
class ReportLayoutIT {
    @TempDir
    Path dir;

    /** A run of three holders with tokens the size of Redis's, a fault, and the zombie's refusal. */
    private static RunResult run(Scenario s, boolean control) {
        History h = new History();
        long t = 1_000_000;
        long token = 1_765_000_000_000L;
        List<RunResult.FaultWindow> faults = new ArrayList<>();
        for (int holder = 0; holder < 3; holder++) {
            String name = "writer-" + holder + "-pid-" + (4_000_000 + holder) + "-session-" + (holder + 7);
            for (int w = 0; w < 6; w++) {
                h.invokeAt("conformance/run-0123456789abcdef/" + s.id(), name, token + holder, name + "-" + w, t)
                        .completeAt(w == 5 && holder == 0 ? 409 : 200, t + 2_000_000);
                t += 25_000_000;
            }
            faults.add(new RunResult.FaultWindow(name, t - 60_000_000, t - 10_000_000));
        }
        HistoryChecker.Result check = HistoryChecker.check(h, Map.of(), null);
        return new RunResult(s, control, "conformance/run-0123456789abcdef/" + s.id(), h, null, check, 2, 3, 1, 1,
                List.of("ran with the suite's counter lease, not redis:redis://…@redis.internal.example:6379: "
                        + s.id() + " faults only the holder's connection to the proxy, and a real lease's watchdog"
                        + " keeps renewing it"), List.of(), faults);
    }

    @Test
    void theReportReadsAtALaptopsWidth() throws Exception {
        assertTrue(HeadlessBrowser.available(), "chromium is not installed (./test.sh installs it)");
        List<ScenarioResult> results = new ArrayList<>();
        for (Scenario s : Scenario.values()) {
            results.add(new ScenarioResult(s, "postgres-accounts-through-pgbouncer", run(s, false), run(s, true),
                    Verdict.INCONCLUSIVE, List.of("the control saw no stale write land: the scenario did not prove it"
                    + " can fail", "the fault did not take effect through the proxy: the fence store still answered"
                    + " on its ready port after SIGSTOP of [4012345, 4012346] (a store or proxy that detaches from"
                    + " the launched tree)"), 41.7));
        }
        String target = "postgres-accounts-through-pgbouncer";
        RunInfo info = new RunInfo(Instant.parse("2026-12-06T09:00:00Z"), 312.4, target,
                "launched by the suite, on http://127.0.0.1:41234/", "0.1.0-SNAPSHOT",
                "33a866a0123456789abcdef0123456789abcdef0", "0.1.0-SNAPSHOT",
                "33a866a0123456789abcdef0123456789abcdef0",
                "PUT /accounts/{id}/balance Content-Type: application/json body {\"balance\": {value}, \"note\":"
                + " \"a long template that goes on and on to test the wrapping of the facts table\"}, token in"
                + " Fencing-Token", "SQL SELECT balance FROM accounts WHERE id = ? on jdbc:postgresql://db.internal"
                + ".example:5432/bank?sslmode=verify-full&sslrootcert=/etc/ssl/certs/internal-ca.pem",
                "jdbc jdbc:postgresql://db.internal.example:5432/bank UPDATE accounts SET balance = ? WHERE id = ?",
                "redis:redis://…@redis.internal.example:6379", Duration.ofSeconds(2), 2, Duration.ofSeconds(20));
        Path page = Files.createDirectories(Path.of("target")).resolve("conformance-report-layout.html");
        Files.writeString(page, Reports.html("postgres-accounts-through-pgbouncer", info, results));

        String layout = HeadlessBrowser.layout(page, 1280, Files.createDirectories(dir.resolve("browser")));
        System.out.println("ReportLayoutIT: at 1280 px " + layout);
        assertEquals(1280, number(layout, "window"), layout);
        assertTrue(number(layout, "page") <= 1280, "the page is no wider than the window: " + layout);
        assertTrue(number(layout, "countsRow") <= 32, "a row of counts is one line: " + layout);
        assertTrue(number(layout, "reasonsRow") <= 80, "a row of reasons is at most four lines: " + layout);
        assertEquals(Scenario.values().length * 2 * 3, number(layout, "labels"), layout);
        assertEquals(0, number(layout, "cut"), "no writer's label reaches its bars: " + layout);
    }

    private static long number(String json, String key) {
        Matcher m = Pattern.compile("\"" + key + "\":(\\d+)").matcher(json);
        assertTrue(m.find(), key + " in " + json);
        return Long.parseLong(m.group(1));
    }
}
