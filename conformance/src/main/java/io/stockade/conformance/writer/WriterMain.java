package io.stockade.conformance.writer;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
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
import java.util.Optional;
import java.util.Set;

import io.stockade.conformance.Template;
import io.stockade.conformance.lease.Lease;
import io.stockade.conformance.lease.LeaseProvider;
import io.stockade.conformance.lease.LeaseProviders;

/**
 * One writer, run as its own OS process so it can be paused for real ({@code kill -STOP}). It takes the lease,
 * then, while its lease looks valid, checks it, does some "work" (the window in which a GC pause or a SIGSTOP
 * turns a holder into a zombie), and writes a unique value with its token. A write whose outcome is unknown
 * (timeout, reset, 5xx) is retried with the same token and value, without re-checking the lease, as real clients
 * do. A stale answer (409/412) ends the lease; the writer then waits for the next one.
 *
 * <p>It reports every step on stdout, one line each, with {@link System#nanoTime()} readings (the monotonic clock
 * every process on the host shares):
 * <pre>
 * LEASE session token nanos          CHECK session nanos
 * INVOKE n session token value nanos DONE n status nanos     UNKNOWN n nanos why...
 * FENCED session nanos               LOST session nanos why...   EXIT nanos
 * </pre>
 * A line {@code stop} on stdin ends it after the current write. With {@link SigV4#ENV} in its environment
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
 */
public final class WriterMain {

    private static volatile boolean stop;
    /** Set when the endpoint is S3 with SigV4 (environment {@link SigV4#ENV}): every PUT is signed. */
    private static SigV4 signer;
    private static String method = "PUT";
    private static Template body;
    private static String contentType;
    /** A SQL target's write (null: HTTP): the JDBC URL, user, statement and parameter templates. */
    private static String jdbc;
    private static String user;
    private static String statement;
    private static List<Template> params;

    private WriterMain() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> a = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            a.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        }
        String name = require(a, "name");
        jdbc = a.get("jdbc");
        user = a.get("user");
        statement = a.get("sql");
        params = new ArrayList<>();
        for (int i = 1; a.containsKey("param-" + i); i++) {
            params.add(Template.parse(a.get("param-" + i), "--param-" + i, Template.BODY, Set.of()));
        }
        URI url = jdbc != null ? URI.create(jdbc.substring("jdbc:".length())) : URI.create(require(a, "url"));
        String header = a.getOrDefault("header", "Fencing-Token");
        method = a.getOrDefault("method", "PUT");
        body = Template.parse(a.getOrDefault("body", "{value}"), "--body", Template.BODY, Set.of("value"));
        contentType = a.get("content-type");
        long work = Long.parseLong(a.getOrDefault("work-ms", "100"));
        long pace = Long.parseLong(a.getOrDefault("pace-ms", "20"));
        Duration timeout = Duration.ofMillis(Long.parseLong(a.getOrDefault("timeout-ms", "10000")));
        int retries = Integer.parseInt(a.getOrDefault("retries", "3"));
        long backoff = Long.parseLong(a.getOrDefault("retry-backoff-ms", "50"));
        long end = System.nanoTime() + Long.parseLong(a.getOrDefault("max-ms", "600000")) * 1_000_000L;
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        signer = SigV4.parse(System.getenv(SigV4.ENV));

        Thread.ofPlatform().daemon().start(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    if (line.trim().equals("stop")) {
                        break;
                    }
                }
            } catch (IOException ignored) {
                // the coordinator is gone: stop as well
            }
            stop = true;
        });

        long n = 0;
        try (LeaseProvider leases = LeaseProviders.create(require(a, "lease"))) {
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
                    out.println("LEASE " + session + " " + lease.token() + " " + System.nanoTime());
                    while (!stop && System.nanoTime() < end) {
                        long now = System.nanoTime();
                        long remaining = lease.deadlineNanos() - now;
                        if (remaining <= 0) {
                            out.println("LOST " + session + " " + now + " expired");
                            break;
                        }
                        long ttlLeft = remaining / 1_000_000L;
                        if (ttlLeft < 2 * (work + pace) + 200 && !renew(lease)) {
                            out.println("LOST " + session + " " + System.nanoTime() + " renewal refused");
                            break;
                        }
                        out.println("CHECK " + session + " " + System.nanoTime());
                        sleepUntil(System.nanoTime() + work * 1_000_000L);   // the work between check and write
                        n++;
                        String value = session + "-" + n;
                        int status = write(out, n, session, lease.token(), value, url, header, timeout, retries,
                                backoff);
                        if (status == 409 || status == 412) {
                            out.println("FENCED " + session + " " + System.nanoTime());
                            break;
                        }
                        Thread.sleep(pace);
                    }
                }
            }
        }
        out.println("EXIT " + System.nanoTime());
        System.exit(0);
    }

    /** Writes one value, retrying an unknown outcome; returns the last definite status, or 0. */
    private static int write(PrintStream out, long n, String session, long token, String value, URI url,
                             String header, Duration timeout, int retries, long backoff) throws InterruptedException {
        int status = 0;
        for (int attempt = 0; attempt <= retries; attempt++) {
            String id = attempt == 0 ? "" + n : n + "r" + attempt;
            out.println("INVOKE " + id + " " + session + " " + token + " " + value + " " + System.nanoTime());
            try {
                status = jdbc != null ? sqlWrite(token, value, timeout) : httpWrite(token, value, url, header, timeout);
                out.println("DONE " + id + " " + status + " " + System.nanoTime());
                if (status < 500) {
                    return status;
                }
            } catch (IOException e) {
                out.println("UNKNOWN " + id + " " + System.nanoTime() + " " + e.getClass().getSimpleName() + ": "
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
    private static int httpWrite(long token, String value, URI url, String header, Duration timeout)
            throws IOException {
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
    private static int sqlWrite(long token, String value, Duration timeout) throws IOException {
        Map<String, String> vars = Map.of("value", value, "token", Long.toString(token));
        return SqlWrite.send(jdbc, user, System.getenv(SqlWrite.PASSWORD_ENV), statement,
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
