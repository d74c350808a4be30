package io.stockade.conformance.writer;

import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.function.Consumer;

import io.stockade.conformance.Template;
import io.stockade.conformance.lease.Lease;
import io.stockade.conformance.lease.LeaseProvider;
import io.stockade.conformance.lease.LeaseProviders;

import org.jspecify.annotations.Nullable;

/**
 * One writer's loop. It takes the lease, then, while its lease looks valid, checks it, does some "work" (the window
 * in which a GC pause or a SIGSTOP turns a holder into a zombie), and writes a unique value with its token. A write
 * whose outcome is unknown (timeout, reset, 5xx) is retried with the same token and value, without re-checking the
 * lease, as real clients do. A stale answer (409/412) ends the lease; the writer then waits for the next one.
 *
 * <p>It reports every step as one line, with {@link System#nanoTime()} readings (the monotonic clock every process
 * on the host shares):
 * <pre>
 * LEASE session token nanos          CHECK session nanos
 * INVOKE n session token value nanos DONE n status nanos     UNKNOWN n nanos why...
 * FENCED session nanos               LOST session nanos why...   EXIT nanos
 * </pre>
 * {@link #stop()} ends it after the current write. With {@link SigV4#ENV} in its environment
 * ({@code accessKey:region:secretKey}) every PUT is signed with AWS SigV4, for S3 endpoints.
 *
 * <p>Each write is one request: {@code --method} (default PUT) to {@code --url}, the headers {@code Host},
 * {@code Connection: close}, {@code Content-Length}, the fencing header with the token, {@code Content-Type} when
 * {@code --content-type} is given, and the SigV4 headers when signing; the body is {@code --body} (default
 * {@code {value}}) with {@code {value}} and {@code {token}} replaced, as UTF-8.
 *
 * <p>Arguments: {@code --name W --lease SPEC --url URL [--header Fencing-Token] [--method PUT] [--body {value}]
 * [--content-type TYPE] [--work-ms 100] [--pace-ms 20] [--timeout-ms 10000] [--retries 3] [--retry-backoff-ms 50]
 * [--max-ms 600000]}. A SQL target's writer takes {@code --jdbc URL --sql STATEMENT [--user NAME] --param-1 T1
 * [--param-2 T2 ...]} in place of {@code --url}, {@code --method} and {@code --body}: each write is a
 * {@link SqlWrite} (the token in the connection's startup options; the templates' {@code {value}} and
 * {@code {token}} filled in; the password from {@link SqlWrite#PASSWORD_ENV}).
 *
 * <p>It runs as its own OS process ({@link WriterMain}, the lines on stdout) when it must be paused for real
 * ({@code kill -STOP}), or as a thread of the suite's JVM otherwise; the loop is the same.
 */
public final class WriterLoop {

    private volatile boolean stop;
    private final Consumer<String> out;
    private final String name;
    private final String leaseSpec;
    private final URI url;
    private final String header;
    /** Set when the endpoint is S3 with SigV4 (environment {@link SigV4#ENV}): every PUT is signed. */
    private final @Nullable SigV4 signer;
    private final String method;
    private final Template body;
    private final @Nullable String contentType;
    /** A SQL target's write (null: HTTP): the JDBC URL, user, password, statement and parameter templates. */
    private final @Nullable String jdbc;
    private final @Nullable String user;
    private final @Nullable String password;
    private final @Nullable String statement;
    private final List<Template> params;
    private final long work;
    private final long pace;
    private final Duration timeout;
    private final int retries;
    private final long backoff;
    private final long maxMs;

    /**
     * @param args   the arguments above, {@code --name value} pairs
     * @param env    the writer's environment ({@link SigV4#ENV}, {@link SqlWrite#PASSWORD_ENV})
     * @param report where each line goes
     */
    public WriterLoop(List<String> args, Map<String, String> env, Consumer<String> report) {
        Map<String, String> a = new HashMap<>();
        for (int i = 0; i + 1 < args.size(); i += 2) {
            a.put(args.get(i).replaceFirst("^--", ""), args.get(i + 1));
        }
        out = report;
        name = require(a, "name");
        leaseSpec = require(a, "lease");
        jdbc = a.get("jdbc");
        user = a.get("user");
        password = env.get(SqlWrite.PASSWORD_ENV);
        statement = a.get("sql");
        params = new ArrayList<>();
        for (int i = 1; a.containsKey("param-" + i); i++) {
            params.add(Template.parse(Objects.requireNonNull(a.get("param-" + i)), "--param-" + i, Template.BODY,
                    Set.of()));
        }
        url = jdbc != null ? URI.create(jdbc.substring("jdbc:".length())) : URI.create(require(a, "url"));
        header = a.getOrDefault("header", "Fencing-Token");
        method = a.getOrDefault("method", "PUT");
        body = Template.parse(a.getOrDefault("body", "{value}"), "--body", Template.BODY, Set.of("value"));
        contentType = a.get("content-type");
        work = Long.parseLong(a.getOrDefault("work-ms", "100"));
        pace = Long.parseLong(a.getOrDefault("pace-ms", "20"));
        timeout = Duration.ofMillis(Long.parseLong(a.getOrDefault("timeout-ms", "10000")));
        retries = Integer.parseInt(a.getOrDefault("retries", "3"));
        backoff = Long.parseLong(a.getOrDefault("retry-backoff-ms", "50"));
        maxMs = Long.parseLong(a.getOrDefault("max-ms", "600000"));
        signer = SigV4.parse(env.get(SigV4.ENV));
    }

    /** Ends the loop after the current write. */
    public void stop() {
        stop = true;
    }

    /** Takes leases and writes until {@link #stop()} or {@code --max-ms}; the last line is {@code EXIT}. */
    public void run() throws Exception {
        long end = System.nanoTime() + maxMs * 1_000_000L;
        long n = 0;
        try (LeaseProvider leases = LeaseProviders.create(leaseSpec)) {
            while (!stop && System.nanoTime() < end) {
                Optional<Lease> maybe;
                try {
                    maybe = leases.tryAcquire(name);
                } catch (IOException e) {
                    maybe = Optional.empty();
                }
                if (maybe.isEmpty()) {
                    Thread.sleep(25);
                    continue;
                }
                try (Lease lease = maybe.get()) {
                    String session = name + ".t" + lease.token();
                    out.accept("LEASE " + session + " " + lease.token() + " " + System.nanoTime());
                    while (!stop && System.nanoTime() < end) {
                        long now = System.nanoTime();
                        long remaining = lease.deadlineNanos() - now;
                        if (remaining <= 0) {
                            out.accept("LOST " + session + " " + now + " expired");
                            break;
                        }
                        long ttlLeft = remaining / 1_000_000L;
                        if (ttlLeft < 2 * (work + pace) + 200 && !renew(lease)) {
                            out.accept("LOST " + session + " " + System.nanoTime() + " renewal refused");
                            break;
                        }
                        out.accept("CHECK " + session + " " + System.nanoTime());
                        sleepUntil(System.nanoTime() + work * 1_000_000L);   // the work between check and write
                        n++;
                        String value = session + "-" + n;
                        int status = write(n, session, lease.token(), value);
                        if (status == 409 || status == 412) {
                            out.accept("FENCED " + session + " " + System.nanoTime());
                            break;
                        }
                        Thread.sleep(pace);
                    }
                }
            }
        }
        out.accept("EXIT " + System.nanoTime());
    }

    /** Writes one value, retrying an unknown outcome; returns the last definite status, or 0. */
    private int write(long n, String session, long token, String value) throws InterruptedException {
        int status = 0;
        for (int attempt = 0; attempt <= retries; attempt++) {
            String id = attempt == 0 ? "" + n : n + "r" + attempt;
            out.accept("INVOKE " + id + " " + session + " " + token + " " + value + " " + System.nanoTime());
            try {
                status = jdbc != null ? sqlWrite(token, value) : httpWrite(token, value);
                out.accept("DONE " + id + " " + status + " " + System.nanoTime());
                if (status < 500) {
                    return status;
                }
            } catch (IOException e) {
                out.accept("UNKNOWN " + id + " " + System.nanoTime() + " " + e.getClass().getSimpleName() + ": "
                        + e.getMessage());
            }
            if (stop) {
                return status;
            }
            Thread.sleep(backoff);
        }
        return status;
    }

    /** One HTTP request; its status. */
    private int httpWrite(long token, String value) throws IOException {
        Map<String, String> headers = new LinkedHashMap<>(Map.of(header, Long.toString(token)));
        if (contentType != null) {
            headers.put("Content-Type", contentType);
        }
        String payload = body.render(Map.of("value", value, "token", Long.toString(token)));
        if (signer != null) {   // signed per attempt, the fencing header with it
            headers.putAll(signer.sign(method, url, payload.getBytes(StandardCharsets.UTF_8), headers,
                    ZonedDateTime.now(ZoneOffset.UTC)));
        }
        return RawHttp.send(url, method, payload, headers, timeout).status();
    }

    /** One SQL statement on a connection of its own, the token in its startup options; the status it maps to. */
    private int sqlWrite(long token, String value) throws IOException {
        Map<String, String> vars = Map.of("value", value, "token", Long.toString(token));
        // only for a SQL target (jdbc set); the suite's Writers pass --sql with every --jdbc
        return SqlWrite.send(Objects.requireNonNull(jdbc), user, password, Objects.requireNonNull(statement),
                params.stream().map(p -> p.render(vars)).toList(), token, timeout);
    }

    private static boolean renew(Lease lease) {
        try {
            return lease.renew();
        } catch (IOException e) {
            return false;
        }
    }

    private static void sleepUntil(long deadline) throws InterruptedException {
        long left;
        while ((left = deadline - System.nanoTime()) > 0) {
            Thread.sleep(Math.max(1, left / 1_000_000L));
        }
    }

    private static String require(Map<String, String> a, String key) {
        String v = a.get(key);
        if (v == null) {
            throw new IllegalArgumentException("missing --" + key);
        }
        return v;
    }
}
