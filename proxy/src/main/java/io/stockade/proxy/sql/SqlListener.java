package io.stockade.proxy.sql;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.nio.file.Files;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.logging.Level;
import java.util.logging.Logger;
import javax.net.ssl.SSLContext;

import io.stockade.policy.Policy;
import io.stockade.policy.ServerConfig;
import io.stockade.policy.SqlConfig;
import io.stockade.proxy.admin.FenceRouting;
import io.stockade.proxy.json.JsonWriter;
import io.stockade.proxy.listener.ListenerTls;
import io.stockade.proxy.pipeline.Readiness;
import io.stockade.proxy.sql.install.FenceSql;
import io.stockade.proxy.sql.session.Proofs;
import io.stockade.proxy.sql.session.Session;
import io.stockade.proxy.sql.session.SessionContext;
import io.stockade.proxy.sql.session.TokenGate;
import io.stockade.proxy.sql.statement.Statements;
import io.stockade.proxy.tls.ClientTlsFiles;
import io.stockade.proxy.verify.registry.TokenVerifiers;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import org.jspecify.annotations.Nullable;

/**
 * The PostgreSQL listener ({@code sql} in the policy file): a port of its own where unmodified SQL clients connect;
 * one thread (virtual) per session and one more for its server side, one server session per client session, no
 * pooling. It is a plain {@link ServerSocket}, not a Helidon WebServer listener: PostgreSQL negotiates TLS inside
 * the protocol (an 8-byte SSLRequest answered 'S' before the handshake), which Helidon's listeners, which start TLS
 * on accept, cannot do, and a relay of two blocking sockets needs nothing else Helidon offers (docs/sql.md).
 */
public final class SqlListener implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(SqlListener.class.getName());
    private static final Logger DECISIONS = Logger.getLogger("stockade.decision");
    private static final Duration CONNECT = Duration.ofSeconds(5);
    private static final Duration PROBE_KEEP = Duration.ofSeconds(1);

    private final SqlConfig config;
    private final ServerSocket socket;
    private final TokenVerifiers verifiers;
    private final SessionContext context;
    private final Set<Socket> open = ConcurrentHashMap.newKeySet();
    private final SqlFenceAccess fence;
    private final Thread acceptor;
    private volatile List<String> lastProbe = List.of();
    private volatile long probedAt;

    private SqlListener(SqlConfig config, ServerSocket socket, TokenVerifiers verifiers, SessionContext context) {
        this.config = config;
        this.socket = socket;
        this.verifiers = verifiers;
        this.context = context;
        this.fence = new SqlFenceAccess(config);
        this.acceptor = Thread.ofVirtual().name("stockade-sql-accept").unstarted(this::accept);
    }

    /**
     * The registration: the listener of a policy file's {@code sql} section, or {@code null} when it has none.
     *
     * @param registry  where the transactions and sessions are counted
     * @param readiness where its policies' health is reported ({@code /health/ready})
     */
    public static @Nullable SqlListener start(@Nullable SqlConfig config, MeterRegistry registry,
                                              Consumer<Readiness.Part> readiness) throws IOException {
        if (config == null) {
            return null;
        }
        SqlListener listener = start(config, registry);
        readiness.accept(new Readiness.Part() {
            @Override
            public Map<String, List<String>> problems() {
                return listener.problems();
            }

            @Override
            public boolean gates(String policy) {
                return listener.gates(policy);
            }
        });
        return listener;
    }

    /**
     * Opens the listener: reads the key, opens the verifiers and TLS contexts, binds the port.
     *
     * @param registry where the transactions and sessions are counted
     * @throws IOException when a file cannot be read, a verifier opened or the port bound
     */
    public static SqlListener start(SqlConfig config, MeterRegistry registry) throws IOException {
        byte[] key = FenceSql.hmacKey(secret(config));
        TokenVerifiers verifiers = new TokenVerifiers(Clock.systemUTC());
        ServerSocket server = null;
        try {
            List<TokenGate.Check> checks = new ArrayList<>();
            for (SqlConfig.SqlPolicy p : config.policies()) {
                if (p.verify() != null) {
                    checks.add(new TokenGate.Check(p.name(), Objects.requireNonNull(p.lock(), "the loader requires lock"
                            + " with verify"), verifiers.open(p.verify(),
                            "sql.policies '" + p.name() + "' fence.verify")));
                }
            }
            ServerConfig.Tls tls = config.listen().tls();
            SSLContext clientTls = tls == null ? null : ListenerTls.context(tls);
            SSLContext serverTls = config.database().tls() == null ? null
                    : ClientTlsFiles.read(config.database().tls(), "sql.database.tls").sslContext();
            Set<String> tables = new LinkedHashSet<>();
            config.tables().forEach(t -> {
                tables.add(t.table());
                tables.add(t.qualified());
            });
            SessionContext context = new SessionContext(config, clientTls, tls == null
                    ? SessionContext.ClientAuth.NONE : SessionContext.ClientAuth.valueOf(tls.clientAuth().name()),
                    serverTls, new Statements(tables), new TokenGate(checks, new Proofs(key,
                    System::currentTimeMillis), config.sessions() == SqlConfig.SessionTokens.ALLOW),
                    new Recorder(registry), CONNECT);
            server = new ServerSocket();
            server.setReuseAddress(true);
            server.bind(new InetSocketAddress(config.listen().host(), config.listen().port()), 256);
            SqlListener listener = new SqlListener(config, server, verifiers, context);
            listener.acceptor.start();
            return listener;
        } catch (IOException | RuntimeException e) {
            verifiers.close();
            if (server != null) {
                server.close();
            }
            throw e;
        }
    }

    private static String secret(SqlConfig config) throws IOException {
        List<String> lines;
        try {
            lines = Files.readAllLines(config.secretFile());
        } catch (IOException e) {
            throw new IOException("sql.secret-file: cannot read " + config.secretFile() + ": " + e.getMessage(), e);
        }
        String line = lines.isEmpty() ? "" : lines.getFirst().strip();
        if (line.length() < 32) {
            throw new IOException("sql.secret-file: the first line of " + config.secretFile() + " must hold at"
                    + " least 32 characters (e.g. openssl rand -hex 32)");
        }
        return line;
    }

    private void accept() {
        while (!socket.isClosed()) {
            try {
                Socket client = socket.accept();
                open.add(client);
                Thread.ofVirtual().name("stockade-sql-session").start(() -> {
                    try {
                        new Session(context, client).run();
                    } finally {
                        open.remove(client);
                    }
                });
            } catch (SocketException e) {
                return; // closed
            } catch (IOException e) {
                LOG.log(Level.WARNING, "accepting a SQL session failed", e);
            }
        }
    }

    /** The port bound (useful with port 0). */
    public int port() {
        return socket.getLocalPort();
    }

    public String host() {
        return config.listen().host();
    }

    /**
     * Each SQL policy's problems for {@code /health/ready}: the database unreachable (every session would fail),
     * asked at most once a second.
     */
    public Map<String, List<String>> problems() {
        long now = System.nanoTime();
        if (now - probedAt > PROBE_KEEP.toNanos()) {
            List<String> problems = new ArrayList<>();
            SqlConfig.Database db = config.database();
            try (Socket probe = new Socket()) {
                probe.connect(new InetSocketAddress(db.host(), db.port()), (int) Duration.ofSeconds(2).toMillis());
            } catch (IOException e) {
                problems.add("sql listener: database " + db.host() + ":" + db.port() + " unreachable: "
                        + e.getMessage());
            }
            lastProbe = List.copyOf(problems);
            probedAt = now;
        }
        Map<String, List<String>> out = new LinkedHashMap<>();
        config.policies().forEach(p -> out.put(p.name(), lastProbe));
        return out;
    }

    /** The admin API's way into the fence table ({@code sql.admin-datasource}), or why there is none. */
    public FenceRouting.SqlFence fence() {
        return fence;
    }

    /** Whether a policy's problems make the replica unready. */
    public boolean gates(String policy) {
        return config.policies().stream().anyMatch(p -> p.name().equals(policy)
                && p.readiness() == Policy.Readiness.GATE);
    }

    @Override
    public void close() {
        try {
            socket.close();
        } catch (IOException e) {
            LOG.log(Level.FINE, "closing the SQL listener", e);
        }
        for (Socket s : open) {
            try {
                s.close();
            } catch (IOException e) {
                LOG.log(Level.FINE, "closing a SQL session", e);
            }
        }
        verifiers.close();
        fence.close();
    }

    /** Counts ({@code stockade_sql_transactions_total{outcome}}, {@code stockade_sql_sessions}) and logs. */
    private static final class Recorder implements SessionContext.Outcomes {
        private final MeterRegistry registry;
        private final Map<String, Counter> counters = new ConcurrentHashMap<>();
        private final AtomicInteger sessions = new AtomicInteger();

        Recorder(MeterRegistry registry) {
            this.registry = registry;
            Gauge.builder("stockade.sql.sessions", sessions, AtomicInteger::get)
                    .description("SQL sessions relayed by the PostgreSQL listener now").register(registry);
            for (String outcome : List.of("accepted", "stale", "missing", "unverified")) {
                counter(outcome);
            }
        }

        private Counter counter(String outcome) {
            return counters.computeIfAbsent(outcome, o -> Counter.builder("stockade.sql.transactions")
                    .description("SQL transactions that carried a token or met the fence, by outcome")
                    .tag("outcome", o).register(registry));
        }

        @Override
        public void transaction(Map<String, String> session, String outcome, @Nullable Long token,
                                Map<Character, String> error) {
            counter(outcome).increment();
            if (!DECISIONS.isLoggable(Level.INFO)) {
                return;
            }
            StringBuilder b = new StringBuilder(256).append("{\"ts\":").append(JsonWriter.quote(
                    Instant.now().toString())).append(",\"event\":\"sql-transaction\"");
            session.forEach((k, v) -> b.append(',').append(JsonWriter.quote(k)).append(':')
                    .append(JsonWriter.quote(v)));
            b.append(",\"outcome\":").append(JsonWriter.quote(outcome)).append(",\"token\":").append(token);
            if (error.containsKey('C')) {
                b.append(",\"code\":").append(JsonWriter.quote(error.get('C')));
            }
            if (error.containsKey('D')) {
                b.append(",\"detail\":").append(JsonWriter.quote(error.get('D')));
            }
            if (error.containsKey('M')) {
                b.append(",\"reason\":").append(JsonWriter.quote(error.get('M')));
            }
            DECISIONS.info(b.append('}').toString());
        }

        @Override
        public void sessions(int delta) {
            sessions.addAndGet(delta);
        }
    }
}
