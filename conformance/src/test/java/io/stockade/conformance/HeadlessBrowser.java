package io.stockade.conformance;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Debian's chromium, headless: a page's DOM after its scripts ran. */
final class HeadlessBrowser {
    static final Path CHROMIUM = Path.of("/usr/bin/chromium");

    private HeadlessBrowser() {
    }

    static boolean available() {
        return Files.isExecutable(CHROMIUM);
    }

    /**
     * The report's layout in a window {@code width} px wide (issue 49: at a laptop's 1400 px the counts table
     * overflowed, its rows grew 150-300 px tall and the writers' labels were cut): a script appended to a copy of the
     * page measures, after the report's own script drew it, how wide the page is against the window, the tallest
     * row of counts and of reasons, and how many writer labels reach past the left edge of their bars. Returned as
     * the JSON the script wrote into {@code data-layout}.
     */
    static String layout(Path page, int width, Path workDir) throws IOException, InterruptedException {
        String measure = """
                <script>
                (function () {
                  const tallest = sel => Math.max(0, ...[...document.querySelectorAll(sel)]
                      .map(r => Math.round(r.getBoundingClientRect().height)));
                  const labels = [...document.querySelectorAll("svg text.holder")];
                  const cut = labels.filter(t => t.getBBox().x + t.getComputedTextLength()
                      > Number(t.ownerSVGElement.getAttribute("data-left")) - 4).length;
                  document.body.setAttribute("data-layout", JSON.stringify({ window: window.innerWidth,
                      page: document.documentElement.scrollWidth, countsRow: tallest("table.counts tr[data-counts]"),
                      reasonsRow: tallest("table.counts tr.reasons"), labels: labels.length, cut: cut }));
                })();
                </script>
                """;
        String html = Files.readString(page, StandardCharsets.UTF_8);
        int end = html.lastIndexOf("</body>");
        Path copy = workDir.resolve("layout-" + width + ".html");
        Files.writeString(copy, html.substring(0, end) + measure + html.substring(end), StandardCharsets.UTF_8);
        String dom = dumpDom(copy, workDir, "--window-size=" + width + ",900");
        int at = dom.indexOf("data-layout=\"");
        if (at < 0) {
            throw new IOException("the layout was not measured: " + dom.substring(0, Math.min(dom.length(), 2000)));
        }
        return dom.substring(at + 13, dom.indexOf('"', at + 13)).replace("&quot;", "\"");
    }

    /** Loads {@code page} (a local file) and returns the DOM as the page's scripts left it. */
    static String dumpDom(Path page, Path workDir) throws IOException, InterruptedException {
        return dumpDom(page, workDir, "--window-size=800,600");
    }

    private static String dumpDom(Path page, Path workDir, String windowSize)
            throws IOException, InterruptedException {
        Path out = workDir.resolve("dom.html");
        Path err = workDir.resolve("chromium.log");
        Process p = new ProcessBuilder(List.of(CHROMIUM.toString(), "--headless", "--no-sandbox", "--disable-gpu",
                "--no-first-run", "--user-data-dir=" + workDir.resolve("profile"), windowSize, "--dump-dom",
                page.toAbsolutePath().toUri().toString()))
                .redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            throw new IOException("chromium did not finish within 60 s: " + Files.readString(err));
        }
        if (p.exitValue() != 0) {
            throw new IOException("chromium exited " + p.exitValue() + ": " + Files.readString(err));
        }
        return Files.readString(out, StandardCharsets.UTF_8);
    }
}
