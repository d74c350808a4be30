package io.stockade.proxy.verify.kubernetes;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.DateTimeException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.Map;
import java.util.logging.Logger;
import java.util.regex.Pattern;

import io.stockade.policy.ClientTls;
import io.stockade.policy.TokenVerification;
import io.stockade.proxy.json.JsonReader;
import io.stockade.proxy.tls.ClientTlsFiles;
import io.stockade.proxy.verify.TokenVerifier;

/**
 * A token is genuine when it is {@code spec.leaseTransitions} of the Kubernetes {@code coordination.k8s.io/v1} Lease
 * named {@code prefix + scope}, and that Lease is held: the client SDK's Kubernetes provider raises
 * {@code leaseTransitions} by one on every acquisition, so it is the current holder's token; it releases by emptying
 * {@code spec.holderIdentity} (keeping the count), and a Lease whose {@code spec.renewTime +
 * spec.leaseDurationSeconds} has passed is free for the next acquirer. Expiry is judged by the proxy's clock against
 * the {@code renewTime} the holder wrote, with {@code clock-skew} of tolerance (the SDK itself never compares
 * clocks; see SECURITY.md).
 * <p>
 * The Lease name is {@code prefix + scope}, not mapped: a name that is not a DNS subdomain (a scope with '/', upper
 * case, longer than 253 characters) cannot be a Lease, and the write is refused without asking. Mapping such scopes
 * (e.g. '/' to '.') would let two scopes share one Lease, and the holder of one write to the other.
 * <p>
 * One GET per lookup, with the bearer token read from {@code token-file} each time (the kubelet rotates projected
 * service-account tokens). 404 is a refusal (nobody holds it); any other status, a body that is not a Lease, an
 * unreadable token file or a timeout is {@link Unavailable}.
 */
public final class KubernetesLeaseVerifier implements TokenVerifier {
    private static final Logger LOG = Logger.getLogger(KubernetesLeaseVerifier.class.getName());
    /** A DNS subdomain (RFC 1123), as Kubernetes requires of object names. */
    private static final Pattern NAME = Pattern.compile(
            "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");
    private static final int MAX_NAME = 253;
    /** More time left than this is remembered as this (far above any cache ttl; keeps the nanoseconds in range). */
    private static final Duration DAY = Duration.ofDays(1);

    private final HttpClient http;
    private final String collection;
    private final String namespace;
    private final String prefix;
    private final Path tokenFile;
    private final Duration timeout;
    private final Duration clockSkew;
    private final Clock clock;
    private volatile boolean closed;

    private KubernetesLeaseVerifier(HttpClient http, TokenVerification.Kubernetes config, Clock clock) {
        this.http = http;
        this.collection = config.apiServer().toString().replaceAll("/+$", "") + "/apis/coordination.k8s.io/v1/"
                + "namespaces/" + config.namespace() + "/leases/";
        this.namespace = config.namespace();
        this.prefix = config.prefix();
        this.tokenFile = config.tokenFile();
        this.timeout = config.timeout();
        this.clockSkew = config.clockSkew();
        this.clock = clock;
    }

    /**
     * Opens the client. Reads the token file once so a wrong path stops the proxy at start; does not call the API
     * server: while it is unreachable every verdict is {@link Unavailable}, and the proxy starts.
     *
     * @param what who the verifier is for, to start every message with
     * @throws IOException when the token file or a TLS file cannot be read
     */
    public static KubernetesLeaseVerifier open(TokenVerification.Kubernetes config, Clock clock, String what)
            throws IOException {
        bearer(config.tokenFile(), what + ".token-file");
        HttpClient.Builder b = HttpClient.newBuilder().connectTimeout(config.timeout())
                .version(HttpClient.Version.HTTP_1_1).followRedirects(HttpClient.Redirect.NEVER);
        if (config.apiServer().getScheme().equalsIgnoreCase("https")) {
            ClientTls tls = config.tls();
            if ((tls == null || tls.ca() == null)
                    && Files.isReadable(TokenVerification.Kubernetes.DEFAULT_CA_FILE)) {
                // in a pod: trust the cluster's CA, as client-go's in-cluster config does
                tls = new ClientTls(TokenVerification.Kubernetes.DEFAULT_CA_FILE, tls == null ? null : tls.cert(),
                        tls == null ? null : tls.key());
                LOG.info(what + ": trusting the service-account CA " + tls.ca());
            }
            if (tls != null) {
                b.sslContext(ClientTlsFiles.read(tls, what + ".tls").sslContext());
            }
        }
        return new KubernetesLeaseVerifier(b.build(), config, clock);
    }

    private static String bearer(Path file, String what) throws IOException {
        String token;
        try {
            token = Files.readString(file, StandardCharsets.UTF_8).strip();
        } catch (IOException e) {
            throw new IOException(what + ": cannot read '" + file + "': " + e, e);
        }
        if (token.isEmpty() || token.chars().anyMatch(c -> c < 0x21 || c > 0x7e)) {
            throw new IOException(what + ": '" + file + "' does not hold a bearer token (one line of printable"
                    + " characters)");
        }
        return token;
    }

    @Override
    public Verdict verify(Claim claim) {
        if (closed) {
            return new Unavailable("Kubernetes: verifier closed");
        }
        String name = prefix + claim.scope();
        if (name.length() > MAX_NAME || !NAME.matcher(name).matches()) {
            return new Refused("'" + name + "' cannot be a Lease name (Kubernetes names are DNS subdomains: at most "
                    + MAX_NAME + " lower-case letters, digits, '-' and '.'), so no Lease holds this scope");
        }
        String where = "Lease '" + name + "' in namespace " + namespace;
        HttpResponse<String> r;
        long sent = System.nanoTime();
        try {
            HttpRequest request = HttpRequest.newBuilder(URI.create(collection + name)).timeout(timeout)
                    .header("Accept", "application/json")
                    .header("Authorization", "Bearer " + bearer(tokenFile, "token-file")).GET().build();
            r = http.send(request, HttpResponse.BodyHandlers.ofString());
        } catch (HttpTimeoutException e) {
            return new Unavailable("Kubernetes API: no answer within " + timeout.toMillis() + "ms");
        } catch (IOException e) {
            return new Unavailable("Kubernetes API: " + e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Unavailable("Kubernetes API: interrupted");
        } catch (RuntimeException e) {
            return new Unavailable("Kubernetes API: " + e);
        }
        if (r.statusCode() == 404) {
            return new Refused("no " + where + ": nobody holds it");
        }
        if (r.statusCode() != 200) {
            // 401/403 (the proxy's token or RBAC), 429, 5xx: the API server could not answer the question
            return new Unavailable("Kubernetes API: HTTP " + r.statusCode() + " for " + where
                    + statusMessage(r.body()));
        }
        try {
            return judge(JsonReader.object(r.body()), claim.token(), where, sent);
        } catch (IllegalArgumentException | ClassCastException | DateTimeException | ArithmeticException e) {
            return new Unavailable("Kubernetes API: " + where + " is not a Lease as expected: " + e.getMessage());
        }
    }

    @SuppressWarnings("unchecked")
    private Verdict judge(Map<String, Object> lease, long token, String where, long sent) {
        if (!"Lease".equals(lease.get("kind")) && lease.get("kind") != null) {
            throw new IllegalArgumentException("kind " + lease.get("kind"));
        }
        Map<String, Object> spec = (Map<String, Object>) lease.get("spec");
        if (spec == null) {
            throw new IllegalArgumentException("no spec");
        }
        Object holder = spec.get("holderIdentity");
        if (!(holder instanceof String h) || h.isEmpty()) {
            return new Refused(where + " was released: nobody holds it");
        }
        Object renew = spec.get("renewTime");
        Object duration = spec.get("leaseDurationSeconds");
        if (!(renew instanceof String renewTime) || !(duration instanceof Long seconds)) {
            return new Refused(where + " has no renewTime or leaseDurationSeconds: it cannot be judged held");
        }
        Instant expires = OffsetDateTime.parse(renewTime).toInstant().plusSeconds(seconds);
        Instant now = clock.instant();
        if (!now.isBefore(expires.plus(clockSkew))) {
            return new Refused(where + " expired: nobody holds it", "renewTime " + renewTime + " + "
                    + seconds + "s is before " + now + " - clock-skew " + clockSkew.toMillis() + "ms");
        }
        long current = spec.get("leaseTransitions") instanceof Long n ? n : 0;
        if (current != token) {
            // the holder's token stays out of the client's answer: a forger would send it back
            return new Refused("not the token of the holder of " + where,
                    "the Lease has leaseTransitions " + current + " (holder " + h + ")");
        }
        // another contender may take the Lease at renewTime + leaseDurationSeconds by its own clock, up to
        // clock-skew ahead of the proxy's: that much is left, counted from the lookup
        Duration left = Duration.between(now, expires.minus(clockSkew));
        return Genuine.leaseLeft(sent, left.isNegative() ? 0 : (left.compareTo(DAY) > 0 ? DAY : left).toNanos());
    }

    /** The {@code message} of a Kubernetes {@code Status} body, if it is one. */
    private static String statusMessage(String body) {
        try {
            Object message = JsonReader.object(body).get("message");
            return message instanceof String m && !m.isEmpty() ? ": " + m : "";
        } catch (RuntimeException e) {
            return "";
        }
    }

    @Override
    public String kind() {
        return "kubernetes";
    }

    @Override
    public void close() {
        closed = true;
        http.shutdownNow();
    }
}
