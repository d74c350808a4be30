package io.stockade.client;

import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** The machine's curl, as the README's sessions drive the proxy. */
final class Curl {
    private Curl() {
    }

    /** The status code curl reports for a request made with {@code args} (the body is dropped). */
    static String status(String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("curl", "-s", "-o", "/dev/null", "-w", "%{http_code}"));
        cmd.addAll(List.of(args));
        return run(cmd).strip();
    }

    /** The body of a GET. */
    static String get(URI uri) throws IOException, InterruptedException {
        return run(List.of("curl", "-s", uri.toString()));
    }

    private static String run(List<String> cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(30, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IOException("curl did not finish within 30 s: " + cmd);
        }
        return out;
    }
}
