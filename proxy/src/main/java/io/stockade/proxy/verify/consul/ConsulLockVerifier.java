package io.stockade.proxy.verify.consul;

import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import io.stockade.policy.TokenVerification;
import io.stockade.proxy.io.SecretFiles;
import io.stockade.proxy.json.JsonReader;
import io.stockade.proxy.tls.ClientTlsFiles;
import io.stockade.proxy.verify.TokenVerifier;

import org.jspecify.annotations.Nullable;

/**
 * A token is genuine when it is the {@code ModifyIndex} of the Consul KV key {@code prefix + scope} and a session
 * holds that key ({@code Session} set): the holder acquires the key with
 * {@code PUT /v1/kv/<key>?acquire=<session>} and takes as its token the key's {@code ModifyIndex} read right after,
 * which is the Raft index of the acquiring write. Every later write to the key (a release, the invalidation of the
 * holder's session, the next holder's acquisition) gives it a higher {@code ModifyIndex}, so a holder that lost the
 * key never matches again, and an index is never reused (it is the cluster's, not the key's: it rises across a
 * deletion and re-creation of the key, which {@code LockIndex} does not).
 * <p>
 * One {@code GET /v1/kv/<key>?consistent} per lookup: the leader confirms it still leads before answering, so a
 * stale follower or a partitioned old leader cannot vouch for a lost holder. 404 (no key) and a key without a session
 * are refusals; an ACL refusal (403), any other status, a body that is not a KV entry, an unreadable token file or a
 * timeout is {@link Unavailable}. The ACL token goes in {@code X-Consul-Token}, read from {@code token-file} on each
 * lookup when given so.
 */
public final class ConsulLockVerifier implements TokenVerifier {
    private final HttpClient http;
    private final String kv;
    private final String prefix;
    private final @Nullable String token;
    private final @Nullable Path tokenFile;
    private final Duration timeout;
    private volatile boolean closed;

    private ConsulLockVerifier(HttpClient http, TokenVerification.Consul config) {
        this.http = http;
        this.kv = config.url().toString().replaceAll("/+$", "") + "/v1/kv/";
        this.prefix = config.prefix();
        this.token = config.token();
        this.tokenFile = config.tokenFile();
        this.timeout = config.timeout();
    }

    /**
     * Opens the client. Reads the token file once so a wrong path stops the proxy at start; does not call Consul:
     * while it is unreachable every verdict is {@link Unavailable}, and the proxy starts.
     *
     * @param what who the verifier is for, to start every message with
     * @throws IOException when the token file or a TLS file cannot be read
     */
    public static ConsulLockVerifier open(TokenVerification.Consul config, String what) throws IOException {
        if (config.tokenFile() != null) {
            aclToken(config.tokenFile(), what + ".token-file");
        }
        HttpClient.Builder b = HttpClient.newBuilder().connectTimeout(config.timeout())
                .version(HttpClient.Version.HTTP_1_1).followRedirects(HttpClient.Redirect.NEVER);
        if (config.tls() != null) {
            b.sslContext(ClientTlsFiles.read(config.tls(), what + ".tls").sslContext());
        }
        return new ConsulLockVerifier(b.build(), config);
    }

    private static String aclToken(Path file, String what) throws IOException {
        String t;
        try {
            t = SecretFiles.firstLine(file);
        } catch (IOException e) {
            throw new IOException(what + ": cannot read '" + file + "': " + e, e);
        }
        if (t.isEmpty() || t.chars().anyMatch(c -> c < 0x21 || c > 0x7e)) {
            throw new IOException(what + ": the first line of '" + file + "' is not an ACL token (printable"
                    + " characters, no spaces)");
        }
        return t;
    }

    /** {@code key} for the path of {@code /v1/kv/<key>}: each segment percent-encoded, the '/' between kept. */
    static String path(String key) {
        StringBuilder b = new StringBuilder(key.length() + 16);
        for (String segment : key.split("/", -1)) {
            b.append(b.isEmpty() ? "" : "/").append(URLEncoder.encode(segment, StandardCharsets.UTF_8)
                    .replace("+", "%20"));
        }
        return b.toString();
    }

    @Override
    public Verdict verify(Claim claim) {
        if (closed) {
            return new Unavailable("Consul: verifier closed");
        }
        String key = prefix + claim.scope();
        String where = "the Consul lock '" + key + "'";
        if (key.isEmpty() || key.startsWith("/") || key.chars().anyMatch(c -> c < 0x20 || c == 0x7f)) {
            return new Refused("'" + key + "' cannot be a Consul KV key, so no Consul lock holds this scope");
        }
        HttpResponse<String> r;
        long sent = System.nanoTime();
        try {
            HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(kv + path(key) + "?consistent"))
                    .timeout(timeout).header("Accept", "application/json").GET();
            String acl = tokenFile != null ? aclToken(tokenFile, "token-file") : token;
            if (acl != null) {
                request.header("X-Consul-Token", acl);
            }
            r = http.send(request.build(), HttpResponse.BodyHandlers.ofString());
        } catch (HttpTimeoutException e) {
            return new Unavailable("Consul: no answer within " + timeout.toMillis() + "ms");
        } catch (IOException e) {
            return new Unavailable("Consul: " + e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Unavailable("Consul: interrupted");
        } catch (RuntimeException e) {
            return new Unavailable("Consul: " + e);
        }
        if (r.statusCode() == 404) {
            return new Refused("nobody holds " + where + " (no such key)");
        }
        if (r.statusCode() != 200) {
            // 403 (the proxy's ACL token), 429, 500 (no leader), ...: Consul could not answer the question
            String body = r.body() == null ? "" : r.body().strip();
            return new Unavailable("Consul: HTTP " + r.statusCode() + " for " + where
                    + (body.isEmpty() ? "" : ": " + (body.length() > 200 ? body.substring(0, 200) + "…" : body)));
        }
        try {
            return judge(JsonReader.read(r.body()), key, claim.token(), where, sent);
        } catch (IllegalArgumentException | ClassCastException e) {
            return new Unavailable("Consul: " + where + " is not a KV entry as expected: " + e.getMessage());
        }
    }

    private static Verdict judge(@Nullable Object body, String key, long token, String where, long sent) {
        if (!(body instanceof List<?> entries) || entries.size() != 1 || !(entries.getFirst() instanceof Map<?, ?> e)) {
            throw new IllegalArgumentException("expected a list of one KV entry");
        }
        if (!key.equals(e.get("Key"))) {
            throw new IllegalArgumentException("the entry is of key '" + e.get("Key") + "'");
        }
        if (!(e.get("ModifyIndex") instanceof Long modifyIndex)) {
            throw new IllegalArgumentException("no ModifyIndex");
        }
        Object session = e.get("Session");
        if (!(session instanceof String s) || s.isEmpty()) {
            return new Refused("nobody holds " + where + " (no session holds the key: released, or the holder's"
                    + " session ended)");
        }
        if (modifyIndex != token) {
            // the holder's token stays out of the client's answer: a forger would send it back
            return new Refused("not the token of the holder of " + where,
                    "the key has ModifyIndex " + modifyIndex + " (session " + s + ", LockIndex "
                            + e.get("LockIndex") + ")");
        }
        // the KV entry says nothing of the session's time left (and Consul may end it anywhere up to twice its
        // TTL after its last renewal): remembered for the cache's bound
        return Genuine.noTimeLeftKnown(sent);
    }

    @Override
    public String kind() {
        return "consul";
    }

    @Override
    public void close() {
        closed = true;
        http.shutdownNow();
    }
}
