package io.stockade.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import javax.net.ssl.SSLSocket;

import org.jspecify.annotations.Nullable;

/**
 * Real etcd members (Debian's {@code etcd-server}, {@code /usr/bin/etcd}) on free loopback ports with temporary data
 * directories, for tests. {@link #single()} starts one member, {@link #cluster(int)} several; each member can be
 * killed ({@code SIGKILL}) and started again on the same ports and data. {@link #singleTls} serves clients over TLS
 * with a certificate of a {@link TestPki}, optionally requiring client certificates of the same CA.
 */
public final class EtcdServer implements AutoCloseable {
    private static final Duration READY = Duration.ofSeconds(20);

    /** One member. */
    public static final class Member {
        final String name;
        final int clientPort;
        final int peerPort;
        final Path dataDir;
        final Path log;
        final TestPki.@Nullable Leaf tls;
        @Nullable Process process;

        Member(String name, Path base, TestPki.@Nullable Leaf tls) {
            this.tls = tls;
            this.name = name;
            this.clientPort = FreePorts.next();
            this.peerPort = FreePorts.next();
            this.dataDir = base.resolve(name + ".etcd");
            this.log = base.resolve(name + ".log");
        }

        public URI clientUrl() {
            return URI.create((tls == null ? "http" : "https") + "://127.0.0.1:" + clientPort);
        }

        String peerUrl() {
            return "http://127.0.0.1:" + peerPort;
        }

        public boolean isAlive() {
            return process != null && process.isAlive();
        }
    }

    private final List<Member> members;
    private final Path base;
    private final boolean clientCertAuth;

    private EtcdServer(List<Member> members, Path base, boolean clientCertAuth) {
        this.members = members;
        this.base = base;
        this.clientCertAuth = clientCertAuth;
    }

    /** Whether etcd is installed. */
    public static boolean available() {
        return Files.isExecutable(Path.of("/usr/bin/etcd")) || Files.isExecutable(Path.of("/usr/local/bin/etcd"));
    }

    public static EtcdServer single() {
        return cluster(1);
    }

    /** Starts {@code size} members forming one cluster and waits until each answers {@code /health}. */
    public static EtcdServer cluster(int size) {
        return cluster(size, null, false);
    }

    /**
     * One member serving clients over TLS ({@code https://} client URL) with {@code cert}, which must be valid for
     * {@code 127.0.0.1}; with {@code clientCertAuth} every client must present a certificate of the same CA
     * ({@code --client-cert-auth}).
     */
    public static EtcdServer singleTls(TestPki.Leaf cert, boolean clientCertAuth) {
        return cluster(1, cert, clientCertAuth);
    }

    private static EtcdServer cluster(int size, TestPki.@Nullable Leaf tls, boolean clientCertAuth) {
        try {
            Path base = Files.createTempDirectory("stockade-etcd-");
            List<Member> members = new ArrayList<>();
            for (int i = 0; i < size; i++) {
                members.add(new Member("m" + i, base, tls));
            }
            EtcdServer server = new EtcdServer(members, base, clientCertAuth);
            for (Member m : members) {
                server.launch(m);
            }
            for (Member m : members) {
                server.awaitHealthy(m);
            }
            return server;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public List<Member> members() {
        return members;
    }

    /** The client URLs, comma-separated (the {@code endpoints} value, e.g. through {@code ${ETCD}}). */
    public String endpoints() {
        return members.stream().map(m -> m.clientUrl().toString()).collect(Collectors.joining(","));
    }

    /** Kills a member at once (SIGKILL) and waits for it to end. */
    public void kill(int index) {
        Member m = members.get(index);
        if (m.process != null) {
            m.process.destroyForcibly();
            try {
                m.process.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Starts a killed member again on the same ports and data directory, and waits until it is healthy. */
    public void restart(int index) {
        Member m = members.get(index);
        launch(m);
        awaitHealthy(m);
    }

    private void launch(Member m) {
        String cluster = members.stream().map(x -> x.name + "=" + x.peerUrl()).collect(Collectors.joining(","));
        List<String> cmd = List.of(available() && Files.isExecutable(Path.of("/usr/bin/etcd")) ? "/usr/bin/etcd"
                        : "/usr/local/bin/etcd",
                "--name", m.name, "--data-dir", m.dataDir.toString(),
                "--listen-client-urls", m.clientUrl().toString(), "--advertise-client-urls", m.clientUrl().toString(),
                "--listen-peer-urls", m.peerUrl(), "--initial-advertise-peer-urls", m.peerUrl(),
                "--initial-cluster", cluster, "--initial-cluster-state", "new",
                "--initial-cluster-token", "stockade-test-" + base.getFileName(),
                "--heartbeat-interval", "50", "--election-timeout", "500");
        if (m.tls != null) {
            cmd = new ArrayList<>(cmd);
            cmd.addAll(List.of("--cert-file", m.tls.cert().toString(), "--key-file", m.tls.key().toString(),
                    "--trusted-ca-file", m.tls.ca().toString(), "--client-cert-auth=" + clientCertAuth));
        }
        try {
            m.process = new ProcessBuilder(cmd).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(m.log.toFile())).start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start etcd (apt-get install -y etcd-server)", e);
        }
    }

    private void awaitHealthy(Member m) {
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();
        long deadline = System.nanoTime() + READY.toNanos();
        while (System.nanoTime() < deadline) {
            if (!Objects.requireNonNull(m.process, "started").isAlive()) {
                throw new IllegalStateException("etcd " + m.name + " exited: " + tail(m));
            }
            try {
                if (m.tls != null ? healthyOverTls(m) : healthy(http, m)) {
                    return;
                }
            } catch (IOException e) {
                // not yet
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }
        throw new IllegalStateException("etcd " + m.name + " not healthy within " + READY + ": " + tail(m));
    }

    private static boolean healthy(HttpClient http, Member m) throws IOException, InterruptedException {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(m.clientUrl() + "/health"))
                .timeout(Duration.ofSeconds(1)).build(), HttpResponse.BodyHandlers.ofString());
        return r.statusCode() == 200 && r.body().contains("true");
    }

    /**
     * {@code GET /health} over a raw TLS socket presenting the member's own certificate (it is a client
     * certificate too) and checking the chain but not the name: a test may give etcd a certificate for another
     * host on purpose.
     */
    @SuppressWarnings("AddressSelection") // a literal IPv4 address resolves to itself alone, as the server listens
    private static boolean healthyOverTls(Member m) throws IOException {
        try (SSLSocket socket = (SSLSocket) TestPki.sslContext(Objects.requireNonNull(m.tls, "a TLS member"))
                .getSocketFactory().createSocket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", m.clientPort), 1000);
            socket.setSoTimeout(1000);
            socket.getOutputStream().write("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
                    .getBytes(StandardCharsets.US_ASCII));
            String answer = new String(socket.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            return answer.startsWith("HTTP/1.1 200") && answer.contains("true");
        }
    }

    private static String tail(Member m) {
        try {
            List<String> lines = Files.readAllLines(m.log);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
        } catch (IOException e) {
            return "(no log)";
        }
    }

    /** Kills every member (by its own process) and deletes the data. */
    @Override
    public void close() {
        for (int i = 0; i < members.size(); i++) {
            kill(i);
        }
        try (var paths = Files.walk(base)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            // best effort
        }
    }
}
