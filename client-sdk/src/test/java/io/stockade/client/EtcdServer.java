package io.stockade.client;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/** A real etcd from /usr/bin/etcd (Debian etcd-server) on free loopback ports with a temporary data dir. */
final class EtcdServer implements AutoCloseable {

    static final Path BINARY = Path.of("/usr/bin/etcd");

    private final Process process;
    private final Path dir;
    private final String endpoint;

    private EtcdServer(Process process, Path dir, String endpoint) {
        this.process = process;
        this.dir = dir;
        this.endpoint = endpoint;
    }

    static EtcdServer start() throws Exception {
        if (!Files.isExecutable(BINARY)) {
            throw new IllegalStateException(BINARY + " is missing: apt-get install etcd-server");
        }
        Path dir = Files.createTempDirectory("stockade-etcd-");
        int client = freePort();
        int peer = freePort();
        String c = "http://127.0.0.1:" + client;
        String p = "http://127.0.0.1:" + peer;
        Process process = new ProcessBuilder(BINARY.toString(), "--name", "t", "--data-dir",
                dir.resolve("data").toString(), "--listen-client-urls", c, "--advertise-client-urls", c,
                "--listen-peer-urls", p, "--initial-advertise-peer-urls", p, "--initial-cluster", "t=" + p,
                "--initial-cluster-state", "new")
                .redirectErrorStream(true).redirectOutput(dir.resolve("etcd.log").toFile()).start();
        EtcdServer server = new EtcdServer(process, dir, c);
        HttpClient http = HttpClient.newHttpClient();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                server.close();
                throw new IllegalStateException("etcd exited: " + Files.readString(dir.resolve("etcd.log")));
            }
            try {
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(c + "/health"))
                        .timeout(Duration.ofSeconds(1)).build(), HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() == 200 && r.body().contains("true")) {
                    return server;
                }
            } catch (IOException notYet) {
                // not listening yet
            }
            Thread.sleep(50);
        }
        server.close();
        throw new IllegalStateException("etcd not healthy within 20 s");
    }

    String endpoint() {
        return endpoint;
    }

    static int freePort() {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Kills etcd by its PID and removes the data dir. */
    @Override
    public void close() throws Exception {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        }
    }
}
