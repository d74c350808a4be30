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

    /** Loads {@code page} (a local file) and returns the DOM as the page's scripts left it. */
    static String dumpDom(Path page, Path workDir) throws IOException, InterruptedException {
        Path out = workDir.resolve("dom.html");
        Path err = workDir.resolve("chromium.log");
        Process p = new ProcessBuilder(List.of(CHROMIUM.toString(), "--headless", "--no-sandbox", "--disable-gpu",
                "--no-first-run", "--user-data-dir=" + workDir.resolve("profile"), "--dump-dom",
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
