package io.stockade.proxy.sql.session;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.stockade.proxy.sql.statement.Statements;
import io.stockade.proxy.sql.wire.Body;
import io.stockade.proxy.sql.wire.MessageReader;
import io.stockade.proxy.sql.wire.Messages;

import org.jspecify.annotations.Nullable;

/**
 * The relay of an authenticated session: client messages to the server on the session's thread, server messages to
 * the client on a second one. Messages pass as they came, except the few the listener owns:
 * <ul>
 *   <li>a statement that sets {@code stockade.fencing_token} (simple Query or Parse; or the Bind of a prepared
 *   {@code set_config('stockade.fencing_token', $1, ...)}) goes on only after the token was judged, with the token
 *   and its proof as the value ({@link TokenGate});</li>
 *   <li>a refused statement ({@link Statements}) or token does not reach the server: in its place the server runs a
 *   {@code DO} block that raises the refusal, so the server's transaction fails as it would for any error and the
 *   client reads one ErrorResponse in the right place of its pipeline; in the extended protocol the client's
 *   messages up to its Sync are then dropped, as the server itself drops them after an error, and the extra
 *   ReadyForQuery the {@code DO} answers with is not passed on;</li>
 *   <li>the fast-path function call, which runs a function by its number, is refused.</li>
 * </ul>
 * The server's ReadyForQuery says where each transaction ends: each one that carried a token or met the fence is
 * counted and logged with its outcome.
 */
final class Relay {
    private static final Logger LOG = Logger.getLogger(Relay.class.getName());
    static final String REFUSED = Statements.REFUSED;
    /** The largest message the listener reads whole (a Query, Parse or Bind it must look into). */
    static final int MAX_INSPECTED = 64 << 20;
    private static final String DO_TAG = "$stockade_refusal$";
    private static final SecureRandom MARKS = new SecureRandom();
    /**
     * The start of the constraint name a refusal's error carries (the field psql and drivers show only when asked),
     * then a random number of that refusal: a client cannot raise an error that passes for the next refusal's.
     */
    static final String REFUSAL_MARK = "stockade_refusal_";

    private final SessionContext ctx;
    private final Map<String, String> description;
    /** The server session ({@code pid:start}), or null when the session query answered none. */
    private final @Nullable String sessionId;
    private final MessageReader clientReader;
    private final OutputStream cout;
    private final MessageReader serverReader;
    private final OutputStream sout;

    /** Prepared statements that set the token from a parameter, by name. */
    private final Map<String, Statements.Setter> setters = new HashMap<>();
    /** After a refusal in the extended protocol: the client's messages up to its Sync are dropped. */
    private boolean discarding;
    /** ReadyForQuery answers asked for, by the client pump, and the refusals' queries whose answers stay here. */
    private long readyAsked;
    private final ConcurrentLinkedQueue<Raised> swallow = new ConcurrentLinkedQueue<>();

    /**
     * A refusal raised in the extended protocol: the query asking for ReadyForQuery number {@code ordinal}, and the
     * error it raises (its SQLSTATE and its constraint name, {@code mark}).
     */
    private record Raised(long ordinal, String code, String mark) {
        /**
         * Whether {@code error} (the last ErrorResponse before that ReadyForQuery) is this refusal's: its SQLSTATE,
         * and its constraint name (ASCII, so it comes back the same in any client encoding, where a message quoting
         * the client's text may not).
         */
        boolean raised(@Nullable Map<Character, String> error) {
            return error != null && code.equals(error.get('C')) && mark.equals(error.get('n'));
        }
    }
    /** The token in force as far as the listener knows, and how each transaction ended. */
    private final Transactions transactions;

    Relay(SessionContext ctx, Map<String, String> description, @Nullable String sessionId, @Nullable Long sessionToken,
          MessageReader clientReader, OutputStream cout, MessageReader serverReader, OutputStream sout) {
        this.ctx = ctx;
        this.description = description;
        this.sessionId = sessionId;
        this.transactions = new Transactions(sessionToken);
        this.clientReader = clientReader;
        this.cout = cout;
        this.serverReader = serverReader;
        this.sout = sout;
    }

    /** Relays until either side ends; {@code closeBoth} ends the other. */
    void run(Runnable closeBoth) throws IOException {
        Thread back = Thread.ofVirtual().name("stockade-sql-" + description.get("session")).start(() -> {
            try {
                serverToClient();
            } catch (IOException | RuntimeException e) {
                LOG.log(Level.FINE, "server side of session " + description + " ended", e);
            } finally {
                closeBoth.run();
            }
        });
        try {
            clientToServer();
        } finally {
            closeBoth.run();
            try {
                back.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            Transactions.Ended cut = transactions.lost(readyAsked);
            if (cut != null) {
                ctx.outcomes().transaction(description, cut.outcome(), cut.token(), cut.error());
            }
        }
    }

    private void clientToServer() throws IOException {
        while (true) {
            byte type = clientReader.next();
            if (discarding && type != Messages.SYNC && type != Messages.TERMINATE) {
                clientReader.copy(OutputStream.nullOutputStream());
                continue;
            }
            switch (type) {
                case Messages.QUERY -> query(text(clientReader.body(MAX_INSPECTED)));
                case Messages.PARSE -> parse(clientReader.body(MAX_INSPECTED));
                case Messages.BIND -> bind(clientReader.body(MAX_INSPECTED));
                case Messages.CLOSE -> {
                    byte[] body = clientReader.body(MAX_INSPECTED);
                    Body in = new Body(body);
                    if (in.int8() == 'S') {
                        setters.remove(in.string());
                    }
                    Body.write(sout, type, body);
                }
                case Messages.SYNC -> {
                    discarding = false;
                    readyAsked++;
                    clientReader.copy(sout);
                }
                case Messages.FUNCTION_CALL -> {
                    clientReader.copy(OutputStream.nullOutputStream());
                    raise(REFUSED, "stockade: the fast-path function call is not relayed (it runs a function by"
                            + " its number, unseen); call the function in a query");
                }
                case Messages.TERMINATE -> {
                    clientReader.copy(sout);
                    sout.flush();
                    return;
                }
                case Messages.DESCRIBE, Messages.EXECUTE, Messages.FLUSH, Messages.COPY_DATA, Messages.COPY_DONE,
                     Messages.COPY_FAIL -> clientReader.copy(sout);
                default -> {
                    clientReader.copy(OutputStream.nullOutputStream());
                    Session.fatal(cout, "08P01", "stockade: unknown message type '" + (char) type
                            + "' from the client");
                    return;
                }
            }
            if (!clientReader.moreBuffered()) {
                sout.flush();
            }
        }
    }

    private void query(String sql) throws IOException {
        Statements.Classified c = ctx.statements().classify(sql, false);
        if (c.refused()) {
            raise(Objects.requireNonNull(c.code(), "a refused Classified has its code"), "stockade: " + c.refusal());
            return;
        }
        StringBuilder out = new StringBuilder(sql.length() + 128);
        int at = 0;
        for (Statements.Setter s : c.setters()) {
            out.append(sql, at, s.start());
            String replaced = apply(s, s.token());
            if (replaced == null) {
                return; // refused: raise() ran in its place
            }
            out.append(replaced);
            at = s.end();
        }
        out.append(sql.substring(at));
        readyAsked++;
        Body.write(sout, Messages.QUERY, Messages.query(out.toString()));
    }

    private void parse(byte[] body) throws IOException {
        Body in = new Body(body);
        String name = in.string();
        String sql = in.string();
        byte[] rest = in.rest();
        Statements.Classified c = ctx.statements().classify(sql, true);
        if (c.refused()) {
            refuseExtended(Objects.requireNonNull(c.code(), "a refused Classified has its code"), "stockade: "
                    + c.refusal());
            return;
        }
        setters.remove(name);
        if (c.setters().size() > 1) {
            // PostgreSQL prepares one command a Parse; judging only the first would relay the others unjudged
            refuseExtended(Statements.REFUSED, "stockade: a prepared statement holds one command, and this one holds "
                    + c.setters().size() + " statements setting stockade.fencing_token: send each in its own");
            return;
        }
        if (c.setters().size() == 1 && c.setters().getFirst().parameter() >= 0) {
            setters.put(name, c.setters().getFirst());
        } else if (!c.setters().isEmpty()) {
            Statements.Setter s = c.setters().getFirst();
            String replaced = judged(s, s.token());
            if (replaced == null) {
                return;
            }
            sql = sql.substring(0, s.start()) + replaced + sql.substring(s.end());
        }
        Body.write(sout, Messages.PARSE, new Body.Builder().string(name).string(sql).bytes(rest).build());
    }

    private void bind(byte[] body) throws IOException {
        Body in = new Body(body);
        String portal = in.string();
        String statement = in.string();
        Statements.Setter setter = setters.get(statement);
        if (setter == null) {
            Body.write(sout, Messages.BIND, body);
            return;
        }
        int formatCount = in.int16();
        int[] formats = new int[formatCount];
        for (int i = 0; i < formatCount; i++) {
            formats[i] = in.int16();
        }
        int count = in.int16();
        byte[][] values = new byte[count][];
        for (int i = 0; i < count; i++) {
            int length = in.int32();
            values[i] = length < 0 ? null : in.bytes(length);
        }
        byte[] results = in.rest();
        int p = setter.parameter();
        if (p >= count || values[p] == null) {
            refuseExtended(Statements.MALFORMED, "stockade: the statement setting stockade.fencing_token was bound"
                    + " without a value for $" + (p + 1));
            return;
        }
        String judged = judgedValue(setter, new String(values[p], StandardCharsets.UTF_8));
        if (judged == null) {
            return;
        }
        values[p] = judged.getBytes(StandardCharsets.UTF_8);
        Body.Builder b = new Body.Builder().string(portal).string(statement).int16(formatCount);
        for (int f : formats) {
            b.int16(f);
        }
        b.int16(count);
        for (byte[] v : values) {
            if (v == null) {
                b.int32(-1);
            } else {
                b.int32(v.length).bytes(v);
            }
        }
        Body.write(sout, Messages.BIND, b.bytes(results).build());
    }

    /** A token statement of a simple query as it goes to the server, or {@code null} when it was refused. */
    private @Nullable String apply(Statements.Setter s, @Nullable String token) throws IOException {
        return switch (s.action()) {
            case SHOW -> "SHOW stockade.fencing_token";
            case RESET, RESET_ALL, DISCARD_ALL -> reset(s);
            case SET -> {
                Verdict v = ctx.gate().judge(Objects.requireNonNull(token, "a SET of a simple query has its literal"
                        + " (classify refuses $n there)"), s.local(), sessionId);
                if (v instanceof Verdict.Refused r) {
                    raise(r.code(), r.message());
                    yield null;
                }
                yield rewritten(s, (Verdict.Taken) v);
            }
        };
    }

    /** A Parse's literal token statement, judged; {@code null} when refused (in the extended protocol). */
    private @Nullable String judged(Statements.Setter s, @Nullable String token) throws IOException {
        if (s.action() == Statements.Action.SHOW) {
            return "SHOW stockade.fencing_token";
        }
        if (s.action() != Statements.Action.SET) {
            return reset(s);
        }
        Verdict v = ctx.gate().judge(Objects.requireNonNull(token, "parse() judges here only a literal token ($n"
                + " waits for the Bind)"), s.local(), sessionId);
        if (v instanceof Verdict.Refused r) {
            refuseExtended(r.code(), r.message());
            return null;
        }
        return rewritten(s, (Verdict.Taken) v);
    }

    /** A bound parameter's token, judged: the value to bind, or {@code null} when refused. */
    private @Nullable String judgedValue(Statements.Setter s, String token) throws IOException {
        Verdict v = ctx.gate().judge(token, s.local(), sessionId);
        if (v instanceof Verdict.Refused r) {
            refuseExtended(r.code(), r.message());
            return null;
        }
        Verdict.Taken taken = (Verdict.Taken) v;
        remember(s, taken);
        return taken.value();
    }

    private String rewritten(Statements.Setter s, Verdict.Taken taken) {
        remember(s, taken);
        if (s.function()) {
            return "SELECT set_config('stockade.fencing_token', '" + taken.value() + "', " + s.local() + ")";
        }
        return "SET " + (s.local() ? "LOCAL " : "") + "stockade.fencing_token = '" + taken.value() + "'";
    }

    /** A token statement takes effect with the ReadyForQuery that ends the message (or the Sync) it came in. */
    private void remember(Statements.Setter s, Verdict.Taken taken) {
        transactions.mark(readyAsked + 1, s.local() ? Transactions.Kind.LOCAL : Transactions.Kind.SESSION,
                taken.token());
    }

    /** RESET of the token, RESET ALL or DISCARD ALL: relayed as such, and the listener forgets the token. */
    private String reset(Statements.Setter s) {
        transactions.mark(readyAsked + 1, Transactions.Kind.RESET_ALL, null);
        return switch (s.action()) {
            case RESET_ALL -> "RESET ALL";
            case DISCARD_ALL -> "DISCARD ALL";
            default -> "RESET stockade.fencing_token";
        };
    }

    /** A refusal as a simple query would meet it: the server raises it in place of the client's message. */
    private void raise(String code, String message) throws IOException {
        raise(code, message, mark());
    }

    /** A refusal's constraint name: {@link #REFUSAL_MARK} and a number of its own. */
    private static String mark() {
        return REFUSAL_MARK + Long.toHexString(MARKS.nextLong());
    }

    private void raise(String code, String message, String mark) throws IOException {
        readyAsked++;
        Body.write(sout, Messages.QUERY, Messages.query(raising(code, message, mark)));
    }

    /** A refusal in the extended protocol: raised now, its ReadyForQuery kept back, the rest dropped up to Sync. */
    private void refuseExtended(String code, String message) throws IOException {
        String mark = mark();
        raise(code, message, mark);
        swallow.add(new Raised(readyAsked, code, mark));
        discarding = true;
    }

    static String raising(String code, String message, String mark) {
        String text = message.replace("\\", "/").replace("'", "''");
        while (text.contains(DO_TAG)) { // a client's text may spell the tag in pieces that meet once one goes
            text = text.replace(DO_TAG, "");
        }
        return "DO " + DO_TAG + "BEGIN RAISE EXCEPTION USING ERRCODE = '" + code + "', MESSAGE = '" + text + "',"
                + " CONSTRAINT = '" + mark + "'; END" + DO_TAG;
    }

    private void serverToClient() throws IOException {
        // the client's ask the next ReadyForQuery answers; the last ErrorResponse since the last ReadyForQuery
        long answered = 0;
        Map<Character, String> error = null;
        while (true) {
            byte type = serverReader.next();
            switch (type) {
                case Messages.READY -> {
                    byte[] body = serverReader.body(1);
                    answered++;
                    boolean refusals = false;
                    Raised head = swallow.peek();
                    if (head != null && head.ordinal() == answered) {
                        swallow.poll();
                        if (head.raised(error)) {
                            refusals = true; // the refusal's own answer: the client asked for none
                        } else {
                            // The server ignored the refusal's query: an earlier message of the client's pipeline
                            // had failed, and it ignores everything up to the Sync, so the query asked for no answer
                            // and this one answers the Sync after it (the client waits for it)
                            answered++;
                            transactions.skipped();
                        }
                    }
                    error = null;
                    if (!refusals) {
                        Body.write(cout, type, body);
                    }
                    Transactions.Ended ended = transactions.ready(body.length == 1 ? (char) body[0] : 'I');
                    if (ended != null) {
                        ctx.outcomes().transaction(description, ended.outcome(), ended.token(), ended.error());
                    }
                }
                case Messages.ERROR -> {
                    byte[] body = serverReader.body(MAX_INSPECTED);
                    error = Messages.fields(body);
                    transactions.error(error);
                    Body.write(cout, type, body);
                }
                case Messages.COMMAND_COMPLETE -> {
                    byte[] body = serverReader.body(MAX_INSPECTED);
                    transactions.completed(new Body(body).string());
                    Body.write(cout, type, body);
                }
                default -> serverReader.copy(cout);
            }
            if (!serverReader.moreBuffered()) {
                cout.flush();
            }
        }
    }

    static String outcomeOf(String code) {
        return switch (code) {
            case "SF409" -> "stale";
            case "SF422" -> "too_far";
            case "SF428" -> "missing";
            case "SF403" -> "unverified";
            case "SF503" -> "unavailable";
            case "SF400" -> "malformed";
            case "SF405" -> "refused";
            default -> "fence_error";
        };
    }

    private static String text(byte[] body) throws MessageReader.ProtocolException {
        return new Body(body).string();
    }
}
