package io.stockade.proxy.etcd;

import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.List;
import javax.net.ssl.SSLException;

import io.stockade.policy.ClientTls;
import io.stockade.proxy.io.SecretFiles;
import io.stockade.proxy.tls.ClientTlsFiles;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.ClientBuilder;
import org.jspecify.annotations.Nullable;

/**
 * Builds the jetcd client of the etcd store and of the etcd verifier from a policy's connection options.
 * <p>
 * TLS is used when the block has {@code tls}, or when the endpoints are {@code https://} (then against the JVM's
 * default authorities); the loader refuses {@code tls} with {@code http://} endpoints and mixed schemes, since
 * jetcd speaks TLS to every member or to none whatever the URLs say.
 * <p>
 * The client does not wait for the cluster ({@code waitForReady(false)}): while etcd is unreachable, or TLS or
 * authentication fails, every call fails within the caller's deadline and the caller refuses the write (503);
 * the proxy still starts. The files (TLS, password) are read here, so a bad one stops the start naming it.
 * <p>
 * <b>Retries.</b> jetcd retries a call that failed with a retryable status (e.g. UNAVAILABLE) within
 * {@code retryMaxDuration}, waiting {@code retryDelay} (500 ms by default) before the first retry, and its retry
 * library refuses a budget that is not above that delay: with the budget set to a deadline of 500 ms or less,
 * every call threw {@code IllegalStateException: maxDuration must be > the delay}. The budget stays the
 * deadline (the callers wait no longer anyway) and the delay is derived from it ({@link #retryDelay}): a fifth of
 * the deadline, at most jetcd's 500 ms, at least 1 ms. The policy loader takes etcd deadlines of at least
 * {@code StoreConfig.Etcd.MIN_TIMEOUT} (50 ms), so the delay is always below the budget.
 */
public final class EtcdClients {
    /** jetcd's own retry delay, used whenever the deadline leaves room for it. */
    static final long DEFAULT_RETRY_DELAY_MS = 500;

    private EtcdClients() {
    }

    /**
     * Opens a client.
     *
     * @param endpoints    the members' client URLs
     * @param timeout      the deadline of each call: connect timeout, retry budget and keepalive timeout
     * @param tls          client TLS, or {@code null}
     * @param username     etcd user, or {@code null} for none
     * @param password     the user's password, or {@code null}
     * @param passwordFile a file whose first line is the password, or {@code null}
     * @param what         the policy field these options come from, to start messages with (e.g. {@code "store"})
     * @throws IOException when a TLS file or the password file cannot be read or is not what it should be
     */
    public static Client open(List<URI> endpoints, Duration timeout, @Nullable ClientTls tls,
                              @Nullable String username, @Nullable String password, @Nullable Path passwordFile,
                              String what) throws IOException {
        ClientBuilder b = Client.builder()
                .endpoints(endpoints.toArray(URI[]::new))
                .connectTimeout(timeout)
                .retryDelay(retryDelay(timeout))
                .retryMaxDuration(timeout)
                .waitForReady(false)
                // etcd's gRPC enforcement policy (MinTime 5 s, PermitWithoutStream false): a ping sent while no
                // call is open is a strike, and after two it answers GOAWAY ENHANCE_YOUR_CALM "too_many_pings"
                // (issue 49, etcd's log); so pings only while calls or watches are open, 10 s apart (>= 5 s)
                .keepaliveTime(Duration.ofSeconds(10))
                .keepaliveWithoutCalls(false)
                .keepaliveTimeout(timeout);
        if (username != null) {
            String secret = password;
            if (passwordFile != null) {
                secret = SecretFiles.password(passwordFile, what + ".password-file");
            }
            b.user(bytes(username)).password(bytes(secret == null ? "" : secret));
        }
        if (tls != null) {
            // Read and checked here (the same reader as the upstreams'), so a bad file stops the start naming it;
            // gRPC-netty verifies the server's name against the endpoint's host.
            ClientTlsFiles files = ClientTlsFiles.read(tls, what + ".tls");
            b.sslContext(s -> {
                if (!files.ca().isEmpty()) {
                    s.trustManager(files.ca().toArray(X509Certificate[]::new));
                }
                if (files.key() != null) {
                    s.keyManager(files.key(), files.chain().toArray(X509Certificate[]::new));
                }
            });
        } else if (endpoints.stream().anyMatch(u -> "https".equalsIgnoreCase(u.getScheme()))) {
            // jetcd ignores the scheme and speaks TLS only when given an SSL context: without one an https://
            // endpoint would get plain text. TLS against the JVM's default authorities, as for https:// upstreams.
            b.sslContext(s -> { });
        }
        return b.build();
    }

    /**
     * jetcd's retry delay (milliseconds, jetcd's default unit) for a deadline: a fifth of it, at most jetcd's
     * default of 500 ms, at least 1 ms — strictly below the deadline whenever the deadline is at least 2 ms.
     */
    static long retryDelay(Duration timeout) {
        return Math.clamp(timeout.toMillis() / 5, 1, DEFAULT_RETRY_DELAY_MS);
    }

    /**
     * A failed call's cause in one line for a 503 answer and the log, with the TLS reason when the handshake failed
     * (e.g. {@code UNAVAILABLE: ssl exception (TLS: PKIX path building failed: ...)}).
     */
    public static String describe(Throwable cause) {
        return firstLine(cause.getMessage()) + tlsReason(cause);
    }

    /** gRPC appends netty's channel pipeline to some messages on further lines; an answer carries one line. */
    private static String firstLine(@Nullable String message) {
        return message == null ? "" : message.lines().findFirst().orElse("");
    }

    /**
     * gRPC says only "UNAVAILABLE: ssl exception" when the TLS handshake fails; the operator needs the why
     * (untrusted CA, wrong name, a certificate etcd refused), which is deeper in the causes.
     */
    private static String tlsReason(Throwable cause) {
        for (Throwable t = cause; t != null; t = t.getCause()) {
            if (t instanceof SSLException) {
                Throwable root = t;
                while (root.getCause() != null) {
                    root = root.getCause();
                }
                return " (TLS: " + firstLine(root.getMessage()) + ")";
            }
        }
        return "";
    }

    private static ByteSequence bytes(String s) {
        return ByteSequence.from(s, StandardCharsets.UTF_8);
    }
}
