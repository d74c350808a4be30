package io.stockade.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Debian's PgBouncer on a free loopback port, in front of a {@link Pg} schema's server, in transaction (or
 * statement) pooling with a small server pool, so consecutive transactions of one client run on different server
 * connections and clients share them: what a named server-side prepared statement does not survive. Its database
 * {@code test} reaches the schema's database with the schema first on the search path (a {@code connect_query} on
 * each server connection: PgBouncer 1.18 refuses pgjdbc's {@code currentSchema} startup parameter). Trust
 * authentication for {@code postgres}; a temporary directory; the process is ended by its own PID.
 *
 * <pre>{@code
 * try (Pg pg = Pg.create(ddl); PgBouncer bouncer = PgBouncer.transaction(pg)) {
 *     String url = bouncer.url();      // jdbc:postgresql://127.0.0.1:PORT/test?user=postgres
 * }
 * }</pre>
 */
public final class PgBouncer implements AutoCloseable {
    private static final Path BINARY = Path.of("/usr/sbin/pgbouncer");
    private static final Duration READY = Duration.ofSeconds(20);
    private static final Pattern SERVER = Pattern.compile("jdbc:postgresql://([^:/]+):(\\d+)/([^?]+)");

    private final Path dir;
    private final int port;
    private final Process process;

    private PgBouncer(Path dir, int port, Process process) {
        this.dir = dir;
        this.port = port;
        this.process = process;
    }

    /** Whether {@code pgbouncer} is installed ({@code ./test.sh} installs it). */
    public static boolean available() {
        return Files.isExecutable(BINARY);
    }

    /** Transaction pooling, two server connections for every client. */
    public static PgBouncer transaction(Pg pg) {
        return start(pg, "transaction", 2);
    }

    /**
     * Starts PgBouncer in front of {@code pg}'s server and waits until it accepts connections.
     *
     * @param poolMode {@code transaction} or {@code statement}
     * @param poolSize server connections for all clients ({@code default_pool_size})
     */
    public static PgBouncer start(Pg pg, String poolMode, int poolSize) {
        Matcher m = SERVER.matcher(pg.base());
        if (!m.matches()) {
            throw new IllegalArgumentException("not a jdbc:postgresql://HOST:PORT/DB server: " + pg.base());
        }
        return start("test = host=" + m.group(1) + " port=" + m.group(2) + " dbname=" + m.group(3)
                + " connect_query='SET search_path = " + pg.schema() + ", public'", poolMode, poolSize,
                List.of("postgres"));
    }

    /**
     * PgBouncer in front of any PostgreSQL server (or anything that speaks its protocol, such as Stockade's SQL
     * listener): its database {@code database} reaches the database of that name at {@code host:port}; each of
     * {@code users} logs in by trust and is the user PgBouncer connects as.
     */
    public static PgBouncer forward(String host, int port, String database, String poolMode, int poolSize,
                                    List<String> users) {
        return start(database + " = host=" + host + " port=" + port + " dbname=" + database, poolMode, poolSize,
                users);
    }

    private static PgBouncer start(String databaseLine, String poolMode, int poolSize, List<String> users) {
        Path dir = null;
        try {
            dir = Files.createTempDirectory("stockade-pgbouncer-",
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwxr-xr-x")));
            int port = FreePorts.next();
            Path ini = dir.resolve("pgbouncer.ini");
            Files.writeString(ini, String.join("\n",
                    "[databases]",
                    databaseLine,
                    "[pgbouncer]",
                    "listen_addr = 127.0.0.1",
                    "listen_port = " + port,
                    "unix_socket_dir =",
                    "auth_type = trust",
                    "auth_file = " + dir.resolve("users.txt"),
                    "pool_mode = " + poolMode,
                    "default_pool_size = " + poolSize,
                    "min_pool_size = 0",
                    "reserve_pool_size = 0",
                    "max_client_conn = 500",
                    "ignore_startup_parameters = extra_float_digits",
                    ""), StandardCharsets.UTF_8);
            StringBuilder userList = new StringBuilder();
            users.forEach(u -> userList.append('"').append(u).append("\" \"\"\n"));
            Files.writeString(dir.resolve("users.txt"), userList.toString(), StandardCharsets.UTF_8);
            List<String> cmd = new ArrayList<>(List.of(BINARY.toString()));
            if ("root".equals(System.getProperty("user.name"))) {
                cmd.addAll(List.of("-u", "postgres"));  // PgBouncer refuses to run as root
            }
            cmd.add(ini.toString());
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true)
                    .redirectOutput(dir.resolve("pgbouncer.log").toFile()).start();
            PgBouncer bouncer = new PgBouncer(dir, port, p);
            bouncer.awaitReady();
            return bouncer;
        } catch (IOException | RuntimeException e) {
            if (dir != null) {
                delete(dir);
            }
            throw e instanceof IOException io ? new UncheckedIOException(io) : (RuntimeException) e;
        }
    }

    /** {@code jdbc:postgresql://127.0.0.1:PORT/test?user=postgres}: the schema's database through PgBouncer. */
    public String url() {
        return "jdbc:postgresql://127.0.0.1:" + port + "/test?user=postgres";
    }

    /** The same URL without parameters (for a policy that gives {@code user} apart). */
    public String base() {
        return "jdbc:postgresql://127.0.0.1:" + port + "/test";
    }

    public int port() {
        return port;
    }

    /** What PgBouncer logged so far (for a failing test's message). */
    public String log() {
        try {
            return Files.readString(dir.resolve("pgbouncer.log"), StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "(no log: " + e.getMessage() + ")";
        }
    }

    @SuppressWarnings("AddressSelection") // a literal IPv4 address resolves to itself alone, as the server listens
    private void awaitReady() throws IOException {
        long deadline = System.nanoTime() + READY.toNanos();
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IOException("pgbouncer exited with " + process.exitValue() + ": " + log());
            }
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 200);
                return;
            } catch (IOException notYet) {
                try {
                    process.waitFor(50, TimeUnit.MILLISECONDS);  // wakes at once if it exits
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted while waiting for pgbouncer", e);
                }
            }
        }
        close();
        throw new IOException("pgbouncer did not listen on 127.0.0.1:" + port + " within " + READY + ": " + log());
    }

    @Override
    public void close() {
        process.toHandle().destroy();  // SIGTERM to its own PID
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.toHandle().destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        delete(dir);
    }

    private static void delete(Path dir) {
        try (Stream<Path> all = Files.walk(dir)) {
            all.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            // a temporary directory: left for the system to clean
        }
    }
}
