package io.stockade.client;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import io.stockade.testing.ChildProxy;
import io.stockade.testing.Jvm;

/** Child JVMs for the process-level tests: this JVM's class path, stdout lines readable with a timeout. */
final class Children {

    private Children() {
    }

    static ProcessBuilder java(String mainClass, String... args) {
        return Jvm.java(mainClass, args);
    }

    /** Collects a process's stdout lines in the background. */
    static BlockingQueue<String> lines(Process p) {
        BlockingQueue<String> q = new LinkedBlockingQueue<>();
        Thread t = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(),
                    StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    q.add(line);
                }
            } catch (IOException ignored) {
                // the process ended
            }
        }, "child-stdout");
        t.setDaemon(true);
        t.start();
        return q;
    }

    /** The next line starting with {@code prefix}, skipping others. */
    static String await(BlockingQueue<String> q, String prefix, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            String line = q.poll(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            if (line == null) {
                throw new AssertionError("no line starting with '" + prefix + "' within " + timeout);
            }
            if (line.startsWith(prefix)) {
                return line.substring(prefix.length()).strip();
            }
        }
    }

    static void signal(long pid, String signal) throws Exception {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(pid)).inheritIO().start();
        if (kill.waitFor() != 0) {
            throw new IllegalStateException("kill -" + signal + " " + pid + " failed");
        }
    }

    /**
     * A real Stockade proxy ({@code io.stockade.proxy.Main}, a {@link ChildProxy}) fencing files under {@code dir}, on
     * a free port.
     */
    static final class Proxy implements AutoCloseable {
        private static final Duration READY_TIMEOUT = Duration.ofSeconds(30);
        final ChildProxy child;
        final String base;

        Proxy(Path dir) throws Exception {
            this(dir, "");
        }

        /** With {@code verify} (a {@code fence.verify} block, e.g. {@code "{kind: redis, url: ...}"}) on the policy. */
        Proxy(Path dir, String verify) throws Exception {
            this(launch(dir, policies(dir, verify)));
        }

        private Proxy(ChildProxy child) {
            this.child = child;
            this.base = child.baseUri().toString();
        }

        /**
         * With the {@code store} and {@code policies} of {@code config} (YAML); the proxy listens on a free loopback
         * port.
         */
        static Proxy withConfig(Path dir, String config) throws Exception {
            return new Proxy(launch(dir, "server:\n  host: 127.0.0.1\n  port: 0\n" + config));
        }

        /** {@code base + path}. */
        URI uri(String path) {
            return URI.create(base + path);
        }

        private static String policies(Path dir, String verify) {
            return """
                    server:
                      host: 127.0.0.1
                      port: 0
                    store:
                      type: memory
                      journal: %s
                    policies:
                      - name: files
                        match:
                          path: /files/{path...}
                          methods: [GET, HEAD, PUT, DELETE]
                        scope: files/{path}
                        fence:
                          header: Fencing-Token
                          methods: [PUT, DELETE]
                          missing: reject
                          equal: accept
                          mode: enforce
                    %s
                        backend:
                          type: file
                          root: %s
                    """.formatted(dir.resolve("journal"), verify.isEmpty() ? "" : "      verify: " + verify,
                    dir.resolve("files"));
        }

        private static ChildProxy launch(Path dir, String yaml) throws Exception {
            Path config = dir.resolve("policy.yaml");
            Files.writeString(config, yaml);
            return ChildProxy.start(ChildProxy.DEFAULT_MAIN, config, List.of(), READY_TIMEOUT);
        }

        @Override
        public void close() {
            child.close();
        }
    }
}
