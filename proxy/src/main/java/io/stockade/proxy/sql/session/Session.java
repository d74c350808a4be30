package io.stockade.proxy.sql.session;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Level;
import java.util.logging.Logger;
import javax.net.ssl.SNIHostName;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;

import io.stockade.policy.SqlConfig;
import io.stockade.proxy.sql.wire.Body;
import io.stockade.proxy.sql.wire.MessageReader;
import io.stockade.proxy.sql.wire.Messages;

import org.jspecify.annotations.Nullable;

/**
 * One client session and its one server session: the startup (TLS on both legs, the startup parameters checked,
 * the token of {@code options} taken out and judged), authentication relayed message by message (SCRAM's channel
 * binding offer removed: a binding to one TLS leg cannot hold on the other), then the relay ({@link Relay}).
 */
public final class Session implements Runnable {
    private static final Logger LOG = Logger.getLogger(Session.class.getName());
    private static final AtomicLong IDS = new AtomicLong();
    private static final int MAX_STARTUP = 10_000;
    private static final int MAX_AUTH = 65_536;
    /**
     * Closes a client's connection that is not authenticated within {@code sql.listen.startup-timeout} (its startup
     * packet, TLS handshake and authentication, in all; PostgreSQL's {@code authentication_timeout}): a client that
     * connects and sends nothing, or a byte a minute, is not held with its thread and socket for ever.
     */
    private static final ScheduledExecutorService STARTUP_DEADLINES = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "stockade-sql-startup-deadline");
        t.setDaemon(true);
        return t;
    });
    private static final String SESSION_QUERY = "SELECT pg_backend_pid()::text || ':' || (extract(epoch FROM"
            + " a.backend_start) * 1000000)::bigint::text FROM pg_stat_get_activity(pg_backend_pid()) a";

    private final SessionContext ctx;
    private Socket client;
    /** Connected by {@link #serve}; null until then. */
    private @Nullable Socket server;
    /** Closes the client's connection unless it is authenticated in time ({@link #STARTUP_DEADLINES}). */
    private @Nullable ScheduledFuture<?> startupDeadline;
    private final Map<String, String> description = new LinkedHashMap<>();

    public Session(SessionContext ctx, Socket client) {
        this.ctx = ctx;
        this.client = client;
        description.put("session", Long.toString(IDS.incrementAndGet()));
        description.put("client", client.getRemoteSocketAddress().toString());
    }

    @Override
    public void run() {
        ctx.outcomes().sessions(1);
        try {
            serve();
        } catch (EOFException e) {
            LOG.log(Level.FINE, "session " + description + " ended", e);
        } catch (IOException | RuntimeException e) {
            LOG.log(Level.FINE, "session " + description + " failed", e);
        } finally {
            if (startupDeadline != null) {
                startupDeadline.cancel(false);
            }
            close(client);
            close(server);
            ctx.outcomes().sessions(-1);
        }
    }

    private void serve() throws IOException {
        client.setTcpNoDelay(true);
        Socket plain = client; // closing it ends a TLS handshake or session layered on it too
        startupDeadline = STARTUP_DEADLINES.schedule(() -> close(plain),
                ctx.config().listen().startupTimeout().toMillis(), TimeUnit.MILLISECONDS);
        byte[] startup = startupPacket();
        if (startup == null) {
            return;
        }
        InputStream cin = new BufferedInputStream(client.getInputStream(), 65_536);
        OutputStream cout = new BufferedOutputStream(client.getOutputStream(), 65_536);
        Map<String, String> params = Messages.startupParameters(startup);
        String token;
        try {
            token = checkStartup(params);
        } catch (Refusal r) {
            fatal(cout, r.code, r.getMessage());
            return;
        }
        description.put("user", params.get("user"));
        description.put("database", params.getOrDefault("database", params.get("user")));
        server = connectServer();
        InputStream sin = new BufferedInputStream(server.getInputStream(), 65_536);
        OutputStream sout = new BufferedOutputStream(server.getOutputStream(), 65_536);
        sout.write(Messages.startup(params));
        sout.flush();
        MessageReader clientReader = new MessageReader(cin);
        MessageReader serverReader = new MessageReader(sin);
        if (!authenticate(clientReader, cout, serverReader, sout)) {
            return;
        }
        String sessionId = internalQuery(serverReader, sout, SESSION_QUERY);
        Long sessionToken = null;
        if (token != null) {
            Verdict verdict = ctx.gate().judge(token, false, sessionId);
            if (verdict instanceof Verdict.Refused refused) {
                ctx.outcomes().transaction(description, Relay.outcomeOf(refused.code()), null,
                        Map.of('C', refused.code(), 'M', refused.message()));
                fatal(cout, refused.code(), refused.message());
                return;
            }
            Verdict.Taken taken = (Verdict.Taken) verdict;
            internalQuery(serverReader, sout, "SET stockade.fencing_token = '" + taken.value() + "'");
            sessionToken = taken.token();
        }
        // authenticated: from here a session may sit idle between statements as long as the client likes
        Objects.requireNonNull(startupDeadline, "set at the start of serve").cancel(false);
        // the server's first ReadyForQuery, held back until the token was set
        Body.write(cout, Messages.READY, new byte[] {'I'});
        cout.flush();
        new Relay(ctx, description, sessionId, sessionToken, clientReader, cout, serverReader, sout).run(() -> {
            close(client);
            close(server);
        });
    }

    /** The startup packet's parameters, after TLS and cancel requests; {@code null} when the session ends. */
    private byte @Nullable [] startupPacket() throws IOException {
        boolean tls = false;
        while (true) {
            InputStream raw = client.getInputStream();
            int length = MessageReader.readInt(raw);
            if (length < 8 || length > MAX_STARTUP) {
                return null;
            }
            int code = MessageReader.readInt(raw);
            byte[] body = raw.readNBytes(length - 8);
            if (body.length < length - 8) {
                return null;
            }
            switch (code) {
                case Messages.SSL_REQUEST -> {
                    if (ctx.clientTls() != null && !tls) {
                        client.getOutputStream().write('S');
                        client.getOutputStream().flush();
                        client = serverSideTls(client);
                        tls = true;
                    } else {
                        client.getOutputStream().write('N');
                        client.getOutputStream().flush();
                    }
                }
                case Messages.GSSENC_REQUEST -> {
                    client.getOutputStream().write('N');
                    client.getOutputStream().flush();
                }
                case Messages.CANCEL_REQUEST -> {
                    forwardCancel(body);
                    return null;
                }
                case Messages.PROTOCOL_3 -> {
                    if (ctx.clientTls() != null && !tls) {
                        OutputStream out = client.getOutputStream();
                        fatal(out, "28000", "stockade: this listener takes TLS sessions only: connect with"
                                + " sslmode=require (or stronger)");
                        return null;
                    }
                    return body;
                }
                default -> {
                    fatal(client.getOutputStream(), "0A000", "stockade: unsupported frontend protocol "
                            + (code >>> 16) + "." + (code & 0xffff) + ": the listener speaks 3.0");
                    return null;
                }
            }
        }
    }

    /**
     * Checks the startup parameters and takes the token out of them: the one database, no replication, no
     * {@code stockade.*} setting but the token, no {@code session_replication_role}.
     *
     * @return the token's text, or {@code null}
     */
    @Nullable String checkStartup(Map<String, String> params) throws Refusal {
        String user = params.get("user");
        if (user == null || user.isEmpty()) {
            throw new Refusal("28000", "stockade: no user in the startup packet");
        }
        String database = params.getOrDefault("database", user);
        if (!database.equals(ctx.config().database().name())) {
            throw new Refusal("3D000", "stockade: database '" + database + "' is not fenced by this listener:"
                    + " it relays to '" + ctx.config().database().name() + "' only");
        }
        if (params.containsKey("replication")) {
            throw new Refusal(Relay.REFUSED, "stockade: replication connections are not relayed");
        }
        String token = null;
        for (String name : List.copyOf(params.keySet())) {
            // a key of params (only this key is removed or replaced in the loop); a startup value is never null
            String value = Objects.requireNonNull(params.get(name), "a startup parameter's value");
            if (name.equals("options")) {
                List<String[]> settings = Options.parse(value);
                List<String[]> kept = new ArrayList<>();
                for (String[] setting : settings) {
                    if (setting[0] == null) {
                        throw new Refusal(Relay.REFUSED, "stockade: startup options word '" + cut(setting[1])
                                + "' is not relayed: only -c name=value and --name=value are (the server reads"
                                + " other words as switches of its own, which may set anything)");
                    }
                    if (setting[0].equals(SqlConfig.TOKEN_SETTING)) {
                        token = value(token, setting[1]);
                    } else {
                        refuseSetting(setting[0]);
                        kept.add(setting);
                    }
                }
                if (kept.isEmpty()) {
                    params.remove(name);
                } else {
                    params.put(name, Options.format(kept));
                }
            } else if (name.toLowerCase(Locale.ROOT).equals(SqlConfig.TOKEN_SETTING)) {
                token = value(token, value);
                params.remove(name);
            } else if (!name.equals("user") && !name.equals("database")) {
                refuseSetting(name);
            }
        }
        return token;
    }

    private static String cut(String s) {
        return s.length() > 40 ? s.substring(0, 40) + "..." : s;
    }

    private static String value(@Nullable String earlier, String token) throws Refusal {
        if (earlier != null) {
            throw new Refusal(Relay.REFUSED, "stockade: " + SqlConfig.TOKEN_SETTING + " is given twice at startup");
        }
        return token;
    }

    private static void refuseSetting(String name) throws Refusal {
        String lower = name.toLowerCase(Locale.ROOT);
        if (lower.startsWith("stockade.")) {
            throw new Refusal(Relay.REFUSED, "stockade: setting " + name + " is not relayed: "
                    + SqlConfig.TOKEN_SETTING + " is the only stockade. setting a client may give");
        }
        if (lower.equals("session_replication_role")) {
            throw new Refusal(Relay.REFUSED, "stockade: session_replication_role is not relayed: it decides which"
                    + " triggers fire, and the fence is a trigger");
        }
    }

    private Socket connectServer() throws IOException {
        SqlConfig.Database db = ctx.config().database();
        Socket socket = new Socket();
        try {
            socket.connect(new InetSocketAddress(db.host(), db.port()), (int) ctx.connect().toMillis());
            socket.setTcpNoDelay(true);
            if (ctx.serverTls() == null) {
                return socket;
            }
            OutputStream out = socket.getOutputStream();
            out.write(new Body.Builder().int32(8).int32(Messages.SSL_REQUEST).build());
            out.flush();
            int answer = socket.getInputStream().read();
            if (answer != 'S') {
                throw new IOException("the database at " + db.host() + ":" + db.port() + " refused TLS (answered "
                        + (answer < 0 ? "nothing" : "'" + (char) answer + "'") + ")");
            }
            SSLSocket tls = (SSLSocket) ctx.serverTls().getSocketFactory().createSocket(socket, db.host(), db.port(),
                    true);
            SSLParameters parameters = tls.getSSLParameters();
            parameters.setEndpointIdentificationAlgorithm("HTTPS");
            if (!db.host().isEmpty() && !Character.isDigit(db.host().charAt(0)) && !db.host().contains(":")) {
                parameters.setServerNames(List.of(new SNIHostName(db.host())));
            }
            tls.setSSLParameters(parameters);
            tls.setUseClientMode(true);
            tls.startHandshake();
            return tls;
        } catch (IOException e) {
            close(socket);
            throw e;
        }
    }

    private Socket serverSideTls(Socket plain) throws IOException {
        // startupPacket() answers an SSLRequest with 'S' only when clientTls is set
        SSLContext clientTls = Objects.requireNonNull(ctx.clientTls(), "client TLS without sql.listen.tls");
        SSLSocket tls = (SSLSocket) clientTls.getSocketFactory().createSocket(plain, null, true);
        tls.setUseClientMode(false);
        switch (ctx.clientAuth()) {
            case REQUIRED -> tls.setNeedClientAuth(true);
            case OPTIONAL -> tls.setWantClientAuth(true);
            case NONE -> {
                // no client certificate asked for
            }
        }
        tls.startHandshake();
        return tls;
    }

    /**
     * Relays authentication until the server's first ReadyForQuery (read, not yet forwarded).
     *
     * @return false when the session ends (the server refused it)
     */
    private boolean authenticate(MessageReader clientReader, OutputStream cout, MessageReader serverReader,
                                 OutputStream sout) throws IOException {
        while (true) {
            byte type = serverReader.next();
            switch (type) {
                case Messages.AUTHENTICATION -> {
                    byte[] body = serverReader.body(MAX_AUTH);
                    Body in = new Body(body);
                    int code = in.int32();
                    if (code == Messages.AUTH_SASL && ctx.serverTls() != null) {
                        List<String> mechanisms = new ArrayList<>(Messages.saslMechanisms(in));
                        mechanisms.remove("SCRAM-SHA-256-PLUS");
                        body = Messages.saslOffer(mechanisms);
                    }
                    Body.write(cout, type, body);
                    cout.flush();
                    if (code == Messages.AUTH_OK || code == Messages.AUTH_SASL_FINAL) {
                        continue;
                    }
                    if (code != 3 && code != 5 && code != Messages.AUTH_SASL && code != Messages.AUTH_SASL_CONTINUE) {
                        fatal(cout, "28000", "stockade: authentication method " + code + " is not relayed (password,"
                                + " md5, SCRAM-SHA-256 and trust are)");
                        return false;
                    }
                    if (clientReader.next() != Messages.PASSWORD) {
                        return false;
                    }
                    byte[] answer = clientReader.body(MAX_AUTH);
                    if (code == Messages.AUTH_SASL && ctx.serverTls() != null && bindsChannel(answer)) {
                        fatal(cout, "28000", "stockade: the client asks for SCRAM channel binding, which cannot"
                                + " cross the listener (each TLS leg has its own certificate): connect with"
                                + " channel_binding=disable (libpq) or channelBinding=disable (pgjdbc)");
                        return false;
                    }
                    Body.write(sout, Messages.PASSWORD, answer);
                    sout.flush();
                }
                case Messages.ERROR -> {
                    serverReader.copy(cout);
                    cout.flush();
                    return false;
                }
                case Messages.READY -> {
                    serverReader.body(1);
                    return true;
                }
                default -> {
                    serverReader.copy(cout);
                }
            }
        }
    }

    /**
     * Whether a SASLInitialResponse's GS2 header is {@code y}: a client that supports channel binding but was not
     * offered it; the server, which does offer it on its TLS leg, would refuse the session as a downgrade.
     */
    private static boolean bindsChannel(byte[] answer) throws MessageReader.ProtocolException {
        Body in = new Body(answer);
        in.string(); // the mechanism
        int length = in.int32();
        return length > 0 && in.bytes(1)[0] == 'y';
    }

    /** Runs the listener's own query and reads its answer to the ReadyForQuery; the first column of the first row. */
    private static @Nullable String internalQuery(MessageReader reader, OutputStream out, String sql)
            throws IOException {
        Body.write(out, Messages.QUERY, Messages.query(sql));
        out.flush();
        String value = null;
        String error = null;
        while (true) {
            byte type = reader.next();
            byte[] body = reader.body(MAX_AUTH);
            if (type == Messages.DATA_ROW && value == null) {
                Body in = new Body(body);
                in.int16();
                int length = in.int32();
                value = length < 0 ? null : new String(in.bytes(length), StandardCharsets.UTF_8);
            } else if (type == Messages.ERROR) {
                error = Messages.fields(body).get('M');
            } else if (type == Messages.READY) {
                if (error != null) {
                    throw new IOException("the listener's own query failed: " + error);
                }
                return value;
            }
        }
    }

    private void forwardCancel(byte[] keys) {
        SqlConfig.Database db = ctx.config().database();
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(db.host(), db.port()), (int) ctx.connect().toMillis());
            OutputStream out = socket.getOutputStream();
            out.write(new Body.Builder().int32(16).int32(Messages.CANCEL_REQUEST).bytes(keys).build());
            out.flush();
            socket.getInputStream().read(); // the server closes the connection once it acted
        } catch (IOException e) {
            LOG.log(Level.FINE, "forwarding a cancel request failed", e);
        }
    }

    static void fatal(OutputStream out, String code, String message) throws IOException {
        Body.write(out, Messages.ERROR, Messages.error(true, code, message, null));
        out.flush();
    }

    private static void close(@Nullable Socket socket) {
        if (socket != null) {
            try {
                socket.close();
            } catch (IOException e) {
                LOG.log(Level.FINE, "closing a socket", e);
            }
        }
    }

    /** A session refused at startup. */
    static final class Refusal extends Exception {
        private static final long serialVersionUID = 1L;
        final String code;
        private final String message;

        Refusal(String code, String message) {
            super(message);
            this.code = code;
            this.message = message;
        }

        /** The message it was made with (never null). */
        @Override
        public String getMessage() {
            return message;
        }
    }
}
