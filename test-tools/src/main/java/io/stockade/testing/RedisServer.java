package io.stockade.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.jspecify.annotations.Nullable;

/**
 * A real {@code redis-server} (Debian's package, built with TLS) on a free loopback port with a temporary
 * directory, for tests. Options say how to start it: persistence ({@link Options#aof}), a password for the default
 * user or an ACL user, TLS only ({@link Options#tls}), a replica of another server, cluster mode. It can be stopped
 * ({@code SIGSTOP}), continued, killed ({@code SIGKILL}) and started again on the same port and directory (the AOF
 * is replayed). Every process is ended by its own PID.
 *
 * <pre>{@code
 * try (RedisServer redis = RedisServer.start(RedisServer.options())) {
 *     String url = redis.url();                 // redis://127.0.0.1:PORT
 * }
 * }</pre>
 */
public final class RedisServer implements AutoCloseable {
    private static final Path BINARY = Path.of("/usr/bin/redis-server");
    private static final Duration READY = Duration.ofSeconds(20);

    /**
     * How to start a server.
     *
     * @param aof          {@code appendonly yes} with {@code appendfsync always} (the token counter survives a crash)
     * @param password     {@code requirepass} (the default user's password), or null
     * @param aclUser      an ACL user {@code user name on >aclPassword aclRules} is added, or null
     * @param aclPassword  the ACL user's password
     * @param aclRules     the ACL user's rules, space-separated (null: {@code ~* +@all})
     * @param tls          serve TLS only ({@code port 0}, {@code tls-port}) with this certificate, or null
     * @param clientCerts  with {@code tls}: require client certificates of the same CA ({@code tls-auth-clients})
     * @param cluster      {@code cluster-enabled yes}; {@link #start} assigns every slot to it (a one-node cluster),
     *                     {@link #startCluster} splits them
     * @param extra        more {@code --name value} arguments
     */
    public record Options(boolean aof, @Nullable String password, @Nullable String aclUser,
                          @Nullable String aclPassword, @Nullable String aclRules, TestPki.@Nullable Leaf tls,
                          boolean clientCerts, boolean cluster, List<String> extra) {
        public Options aof(boolean on) {
            return new Options(on, password, aclUser, aclPassword, aclRules, tls, clientCerts, cluster, extra);
        }

        public Options password(String requirepass) {
            return new Options(aof, requirepass, aclUser, aclPassword, aclRules, tls, clientCerts, cluster, extra);
        }

        public Options aclUser(String user, String userPassword, String rules) {
            return new Options(aof, password, user, userPassword, rules, tls, clientCerts, cluster, extra);
        }

        public Options tls(TestPki.Leaf cert, boolean requireClientCerts) {
            return new Options(aof, password, aclUser, aclPassword, aclRules, cert, requireClientCerts, cluster,
                    extra);
        }

        public Options cluster(boolean on) {
            return new Options(aof, password, aclUser, aclPassword, aclRules, tls, clientCerts, on, extra);
        }

        public Options with(String... more) {
            List<String> all = new ArrayList<>(extra);
            all.addAll(List.of(more));
            return new Options(aof, password, aclUser, aclPassword, aclRules, tls, clientCerts, cluster, all);
        }
    }

    private final Options options;
    private final Path dir;
    private final int port;
    /** The cluster bus port (cluster mode), kept across restarts as the port is. */
    private final int clusterPort;
    private final boolean allSlots;
    private @Nullable Process process;

    private RedisServer(Options options, Path dir, int port, boolean allSlots) {
        this.options = options;
        this.dir = dir;
        this.port = port;
        this.clusterPort = options.cluster() ? FreePorts.next() : 0;
        this.allSlots = allSlots;
    }

    /** Whether {@code redis-server} is installed ({@code ./test.sh} installs it). */
    public static boolean available() {
        return Files.isExecutable(BINARY);
    }

    /** What a test that needs Redis says when it is not installed. */
    public static final String MISSING = "redis-server is not installed (apt-get install -y redis-server; ./test.sh"
            + " installs it)";

    /** No persistence, no password, plain TCP. */
    public static Options options() {
        return new Options(false, null, null, null, null, null, false, false, List.of());
    }

    /** Starts a server and waits until it accepts connections. */
    public static RedisServer start(Options options) {
        try {
            RedisServer server = new RedisServer(options, Files.createTempDirectory("stockade-redis-"),
                    FreePorts.next(), true);
            server.launch();
            return server;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * A Redis Cluster of {@code size} primaries (no replicas), the 16384 slots split evenly between them in order
     * (node 0 serves the lowest slots), the nodes introduced with {@code CLUSTER MEET}; returns once every node says
     * the cluster is ok.
     */
    public static List<RedisServer> startCluster(int size) {
        List<RedisServer> nodes = new ArrayList<>();
        try {
            for (int i = 0; i < size; i++) {
                RedisServer node = new RedisServer(options().cluster(true),
                        Files.createTempDirectory("stockade-redis-"), FreePorts.next(), false);
                nodes.add(node);
                node.launch();
            }
            for (int i = 0; i < size; i++) {
                nodes.get(i).cli("cluster", "addslotsrange", Integer.toString(16384 * i / size),
                        Integer.toString(16384 * (i + 1) / size - 1));
                if (i > 0) {
                    // with its bus port: MEET assumes the port + 10000 without it
                    nodes.get(0).cli("cluster", "meet", "127.0.0.1", Integer.toString(nodes.get(i).port),
                            Integer.toString(nodes.get(i).clusterPort));
                }
            }
            for (RedisServer node : nodes) {
                node.awaitLog("Cluster state changed: ok", READY);
            }
            return nodes;
        } catch (IOException | RuntimeException e) {
            nodes.forEach(RedisServer::close);
            throw e instanceof IOException io ? new UncheckedIOException(io) : (RuntimeException) e;
        }
    }

    /** Runs {@code redis-cli} against this server (plain TCP, no password) and returns its output. */
    public String cli(String... args) throws IOException {
        List<String> cmd = new ArrayList<>(List.of("redis-cli", "-p", Integer.toString(port)));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        try {
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(10, TimeUnit.SECONDS) || p.exitValue() != 0 || out.startsWith("(error)")
                    || out.startsWith("ERR")) {
                throw new IllegalStateException(cmd + ": " + out);
            }
            return out;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** A replica of {@code primary} ({@code replicaof}), started and waiting until it has synced with it. */
    public static RedisServer replicaOf(RedisServer primary, Options options) {
        return replicaOf(primary.port, primary.options.password(), options);
    }

    /**
     * A replica of the server reached at {@code 127.0.0.1:port} (a primary, or a {@link TcpRelay} in front of one),
     * started and waiting until it has synced.
     */
    public static RedisServer replicaOf(int port, @Nullable String masterauth, Options options) {
        List<String> more = new ArrayList<>(List.of("--replicaof", "127.0.0.1", Integer.toString(port)));
        if (masterauth != null) {
            more.addAll(List.of("--masterauth", masterauth));
        }
        RedisServer replica = start(options.with(more.toArray(String[]::new)));
        replica.awaitLog("MASTER <-> REPLICA sync: Finished with success", READY);
        return replica;
    }

    private void launch() throws IOException {
        List<String> cmd = new ArrayList<>(List.of(BINARY.toString(), "--bind", "127.0.0.1", "--dir", dir.toString(),
                "--save", "", "--daemonize", "no", "--logfile", log().toString(), "--pidfile", "",
                "--protected-mode", "no",
                // a replica syncs at once (Redis waits 5 s for more replicas by default)
                "--repl-diskless-sync-delay", "0"));
        if (options.tls() != null) {
            cmd.addAll(List.of("--port", "0", "--tls-port", Integer.toString(port),
                    "--tls-cert-file", options.tls().cert().toString(),
                    "--tls-key-file", options.tls().key().toString(),
                    "--tls-ca-cert-file", options.tls().ca().toString(),
                    "--tls-auth-clients", options.clientCerts() ? "yes" : "no"));
        } else {
            cmd.addAll(List.of("--port", Integer.toString(port)));
        }
        if (options.aof()) {
            cmd.addAll(List.of("--appendonly", "yes", "--appendfsync", "always"));
        } else {
            cmd.addAll(List.of("--appendonly", "no"));
        }
        if (options.password() != null) {
            cmd.addAll(List.of("--requirepass", options.password()));
        }
        if (options.aclUser() != null) {
            cmd.addAll(List.of("--user", options.aclUser(), "on", ">" + options.aclPassword()));
            cmd.addAll(List.of((options.aclRules() == null ? "~* +@all" : options.aclRules()).split(" ")));
        }
        if (options.cluster()) {
            // the cluster bus port from this JVM's block too: Redis's default, the port + 10000, lies in another
            // test JVM's block or the kernel's ephemeral range (a CI run met it taken: "Address already in use")
            cmd.addAll(List.of("--cluster-enabled", "yes", "--cluster-config-file",
                    dir.resolve("nodes.conf").toString(), "--cluster-port", Integer.toString(clusterPort)));
        }
        cmd.addAll(options.extra());
        long logged = Files.exists(log()) ? Files.size(log()) : 0;
        process = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("stdout.log").toFile())).start();
        awaitLogAfter(logged, "Ready to accept connections", READY);
        if (options.cluster() && allSlots && logged == 0) {
            cli("cluster", "addslotsrange", "0", "16383");
            awaitLogAfter(logged, "Cluster state changed: ok", READY);
        }
    }

    /** The server's log file. */
    public Path log() {
        return dir.resolve("redis.log");
    }

    /** Waits until the log has a line containing {@code text}. */
    public void awaitLog(String text, Duration timeout) {
        awaitLogAfter(0, text, timeout);
    }

    private void awaitLogAfter(long offset, String text, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            try {
                if (Files.exists(log())) {
                    String all = Files.readString(log());
                    if (all.length() > offset && all.substring((int) Math.min(offset, all.length())).contains(text)) {
                        return;
                    }
                }
                if (process != null && !process.isAlive()) {
                    throw new IllegalStateException("redis-server exited (" + process.exitValue() + "): " + tail());
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("redis-server: no '" + text + "' within " + timeout + ": "
                            + tail());
                }
                Thread.sleep(20);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }
    }

    private String tail() {
        try {
            List<String> lines = new ArrayList<>(Files.exists(log()) ? Files.readAllLines(log()) : List.of());
            Path out = dir.resolve("stdout.log");
            if (Files.exists(out)) {
                lines.addAll(Files.readAllLines(out));
            }
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
        } catch (IOException e) {
            return "(no log)";
        }
    }

    public int port() {
        return port;
    }

    /** {@code redis://127.0.0.1:PORT}, or {@code rediss://…} for a TLS server. */
    public String url() {
        return (options.tls() != null ? "rediss" : "redis") + "://127.0.0.1:" + port;
    }

    public long pid() {
        return Objects.requireNonNull(process, "started").pid();
    }

    public Path dir() {
        return dir;
    }

    public boolean isAlive() {
        return process != null && process.isAlive();
    }

    /** {@code kill -STOP}: the server stops answering, its connections stay open. */
    public void pause() {
        signal("STOP");
    }

    /** {@code kill -CONT}. */
    public void resume() {
        signal("CONT");
    }

    private void signal(String signal) {
        try {
            Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(pid())).inheritIO().start();
            if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
                throw new IllegalStateException("kill -" + signal + " " + pid() + " failed");
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** {@code SIGKILL} and wait for the end: a crash (with {@link Options#aof} the data is in the AOF). */
    public void kill() {
        if (process != null) {
            process.destroyForcibly();
            try {
                process.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Starts a killed server again on the same port and directory, and waits until it accepts connections. */
    public void restart() {
        kill();
        try {
            launch();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Kills the server by its PID and deletes its directory. */
    @Override
    public void close() {
        if (process != null && process.isAlive()) {
            signal("CONT"); // a stopped process dies of SIGKILL too, but do not leave it to chance
        }
        kill();
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            // best effort
        }
    }
}
