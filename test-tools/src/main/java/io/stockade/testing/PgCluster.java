package io.stockade.testing;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.jspecify.annotations.Nullable;

/**
 * A private PostgreSQL 15 cluster for fault tests: {@code initdb} in a temp dir owned by the
 * {@code postgres} user, {@code pg_ctl start} on a free loopback port, trust auth. {@link #stopImmediate()} and
 * {@link #start()} stop and restart it on the same port and data directory. {@link #close()} stops it, kills the
 * postmaster by its PID if it is still alive, and deletes the directory. Needs root (runs the tools with
 * {@code runuser -u postgres}).
 */
public final class PgCluster implements AutoCloseable {
    static final Path BIN = Path.of("/usr/lib/postgresql/15/bin");
    private final Path dir;
    private final int port;
    /** Where it listens: 127.0.0.1, or an address in a network namespace ({@link #createIn}). */
    private final String host;
    /** What runs pg_ctl: nothing, or {@code ip netns exec NAME} to start it in a namespace. */
    private final List<String> prefix;
    private volatile long postmasterPid = -1;

    private PgCluster(Path dir, int port) {
        this(dir, port, "127.0.0.1", List.of());
    }

    private PgCluster(Path dir, int port, String host, List<String> prefix) {
        this.dir = dir;
        this.port = port;
        this.host = host;
        this.prefix = prefix;
    }

    /**
     * initdb, then start the postmaster in the network namespace {@code net}, listening on its address only and
     * taking connections from 10.231.0.0/16 (the namespaces' pairs) without a password: cut off with
     * {@link NetNs#cut()}.
     */
    public static PgCluster createIn(NetNs net) throws IOException {
        Path dir = Files.createTempDirectory("stockade-pg-");
        run(List.of("chown", "postgres:postgres", dir.toString()));
        PgCluster c = new PgCluster(dir, FreePorts.next(), net.address(), net.exec());
        try {
            c.pg("initdb", "-D", c.data().toString(), "-A", "trust", "-U", "postgres", "--no-sync");
            Files.writeString(c.data().resolve("pg_hba.conf"), "host all all 10.231.0.0/16 trust\n",
                    StandardCharsets.UTF_8, StandardOpenOption.APPEND);
            c.start();
            return c;
        } catch (IOException | RuntimeException e) {
            c.close();
            throw e;
        }
    }

    /** Whether the binaries are here and this JVM can switch to the postgres user. */
    public static boolean available() {
        return Files.isExecutable(BIN.resolve("pg_ctl")) && "root".equals(System.getProperty("user.name"));
    }

    /** initdb and start; on failure everything started is stopped again. */
    public static PgCluster create() throws IOException {
        return create(null, false);
    }

    /**
     * A cluster that takes TCP connections over TLS only ({@code ssl = on}; {@code pg_hba.conf}: {@code hostssl}
     * for 127.0.0.1, {@code hostnossl ... reject}), so a test that gets through has proved TLS was used.
     *
     * @param cert              the server's certificate, key and the CA client certificates are checked against
     * @param clientCertRequired whether a client must also present a certificate of that CA
     *                          ({@code clientcert=verify-ca})
     */
    public static PgCluster createTls(TestPki.Leaf cert, boolean clientCertRequired) throws IOException {
        return create(cert, clientCertRequired);
    }

    private static PgCluster create(TestPki.@Nullable Leaf tls, boolean clientCertRequired) throws IOException {
        Path dir = Files.createTempDirectory("stockade-pg-");
        run(List.of("chown", "postgres:postgres", dir.toString()));
        PgCluster c = new PgCluster(dir, FreePorts.next());
        try {
            c.pg("initdb", "-D", c.data().toString(), "-A", "trust", "-U", "postgres", "--no-sync");
            if (tls != null) {
                c.serveTls(tls, clientCertRequired);
            }
            c.start();
            return c;
        } catch (IOException | RuntimeException e) {
            c.close();
            throw e;
        }
    }

    /** PostgreSQL wants its key owned by its user and private (0600). */
    private void serveTls(TestPki.Leaf tls, boolean clientCertRequired) throws IOException {
        Files.copy(tls.cert(), data().resolve("server.crt"));
        Files.copy(tls.key(), data().resolve("server.key"));
        Files.copy(tls.ca(), data().resolve("root.crt"));
        run(List.of("chown", "postgres:postgres", data().resolve("server.crt").toString(),
                data().resolve("server.key").toString(), data().resolve("root.crt").toString()));
        run(List.of("chmod", "600", data().resolve("server.key").toString()));
        Files.writeString(data().resolve("postgresql.conf"), """

                ssl = on
                ssl_cert_file = 'server.crt'
                ssl_key_file = 'server.key'
                ssl_ca_file = 'root.crt'
                """, StandardCharsets.UTF_8, StandardOpenOption.APPEND);
        Files.writeString(data().resolve("pg_hba.conf"), """
                local     all all              trust
                hostssl   all all 127.0.0.1/32 trust%s
                hostnossl all all 127.0.0.1/32 reject
                """.formatted(clientCertRequired ? " clientcert=verify-ca" : ""), StandardCharsets.UTF_8);
    }

    public int port() {
        return port;
    }

    /** {@code jdbc:postgresql://127.0.0.1:PORT/postgres} (the namespace's address for {@link #createIn}). */
    public String url() {
        return "jdbc:postgresql://" + host + ":" + port + "/postgres";
    }

    public Path data() {
        return dir.resolve("data");
    }

    /** pg_ctl start (waits until it accepts connections) on the same port and data directory. */
    public void start() throws IOException {
        List<String> start = new ArrayList<>(prefix);
        start.addAll(List.of("runuser", "-u", "postgres", "--", BIN.resolve("pg_ctl").toString(), "-D",
                data().toString(), "-w", "-t", "20", "-l", dir.resolve("server.log").toString(), "-o",
                "-p " + port + " -k " + dir + " -c listen_addresses=" + host, "start"));
        run(start);
        postmasterPid = Long.parseLong(Files.readAllLines(data().resolve("postmaster.pid")).getFirst().strip());
    }

    /** pg_ctl stop -m immediate: every backend dies at once, nothing is shut down cleanly. */
    public void stopImmediate() throws IOException {
        pg("pg_ctl", "-D", data().toString(), "-w", "-t", "20", "-m", "immediate", "stop");
    }

    public String serverLog() {
        try {
            return Files.readString(dir.resolve("server.log"));
        } catch (IOException e) {
            return "";
        }
    }

    @Override
    public void close() {
        try {
            if (Files.exists(data().resolve("postmaster.pid"))) {
                pg("pg_ctl", "-D", data().toString(), "-w", "-t", "10", "-m", "immediate", "stop");
            }
        } catch (IOException | RuntimeException e) {
            // fall through to the kill
        }
        long pid = postmasterPid;
        if (pid > 0) {
            ProcessHandle.of(pid).ifPresent(h -> {
                h.destroyForcibly();
                h.onExit().orTimeout(10, TimeUnit.SECONDS).exceptionally(t -> null).join();
            });
        }
        try (Stream<Path> all = Files.walk(dir)) {
            all.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            // a temp dir left behind
        }
    }

    private void pg(String tool, String... args) throws IOException {
        List<String> command = new ArrayList<>(List.of("runuser", "-u", "postgres", "--",
                BIN.resolve(tool).toString()));
        command.addAll(List.of(args));
        run(command);
    }

    private static void run(List<String> command) throws IOException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null"))).start();
        try {
            // pg_ctl start leaves the postmaster holding no pipe of ours (-l log file), so reading to EOF ends
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IOException("timed out: " + command);
            }
            if (p.exitValue() != 0) {
                throw new IOException(command + " exited with " + p.exitValue() + ":\n" + out);
            }
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new UncheckedIOException(new IOException("interrupted: " + command));
        }
    }
}
