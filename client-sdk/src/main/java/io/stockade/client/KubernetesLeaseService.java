package io.stockade.client;

import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.jspecify.annotations.Nullable;

/**
 * Kubernetes {@code coordination.k8s.io/v1} Lease over the REST API (java.net.http; no client library).
 *
 * <ul>
 *   <li>Token: {@code spec.leaseTransitions}, raised by one on every acquisition — also when the same identity
 *       takes the lease again, which client-go does not do. A Lease this provider creates starts at 1. If the object
 *       was deleted, the count restarts; this provider then starts above the highest token it has seen itself.</li>
 *   <li>Expiry, as client-go: a Lease is free when its holder is empty, or when its record has not changed for
 *       {@code leaseDurationSeconds} as measured on <em>this</em> process's monotonic clock since it first saw that
 *       record. The API server's and other nodes' clocks are never compared with ours.</li>
 *   <li>Every write carries {@code metadata.resourceVersion}: the API server applies it only if nobody changed the
 *       object since we read it (409 Conflict otherwise). Renewal updates our last version; a conflict means someone
 *       else wrote the Lease, and the renewal is refused.</li>
 * </ul>
 */
final class KubernetesLeaseService implements LeaseService {

    private static final DateTimeFormatter MICRO_TIME =
            DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSSSSX").withZone(ZoneOffset.UTC);

    /** A held Lease: the object as we last wrote it. */
    private static final class Handle {
        volatile Map<String, Object> object;

        Handle(Map<String, Object> object) {
            this.object = object;
        }
    }

    /** What this process last saw of a Lease, and when (ticker). */
    private record Observed(@Nullable String resourceVersion, long at) {
    }

    private final URI collection;
    private final String namespace;
    private final @Nullable String bearer;
    private final HttpClient http;
    private final Ticker ticker;
    private final Map<String, Observed> observed = new ConcurrentHashMap<>();
    private final Map<String, Long> highestSeen = new ConcurrentHashMap<>();

    KubernetesLeaseService(URI apiServer, String namespace, @Nullable String bearer, HttpClient http,
                           Ticker ticker) {
        String base = apiServer.toString().replaceAll("/+$", "");
        this.collection = URI.create(base + "/apis/coordination.k8s.io/v1/namespaces/"
                + URLEncoder.encode(namespace, StandardCharsets.UTF_8) + "/leases");
        this.namespace = namespace;
        this.bearer = bearer;
        this.http = http;
        this.ticker = ticker;
    }

    @Override
    public Grant acquire(String name, String holder, Duration ttl, Duration timeout) throws Exception {
        long deadline = ticker.read() + timeout.toNanos();
        long poll = LeaseService.pollNanos(ttl);
        while (true) {
            Grant g = tryAcquire(name, holder, ttl);
            if (g != null) {
                return g;
            }
            long left = deadline - ticker.read();
            if (left <= 0) {
                throw new TimeoutException("Lease '" + name + "' is held by another holder; not acquired within "
                        + timeout);
            }
            TimeUnit.NANOSECONDS.sleep(Math.min(left, poll));
        }
    }

    @SuppressWarnings("unchecked")
    private @Nullable Grant tryAcquire(String name, String holder, Duration ttl) throws Exception {
        HttpResponse<String> got = send("GET", item(name), null, Duration.ofSeconds(10));
        long now = ticker.read();
        String when = MICRO_TIME.format(Instant.now());
        int seconds = (int) Math.max(1, (ttl.toNanos() + 999_999_999L) / 1_000_000_000L);
        if (got.statusCode() == 404) {
            long token = Math.max(1, highestSeen.getOrDefault(name, 0L) + 1);
            Map<String, Object> lease = new LinkedHashMap<>();
            lease.put("apiVersion", "coordination.k8s.io/v1");
            lease.put("kind", "Lease");
            lease.put("metadata", new LinkedHashMap<>(Map.of("name", name, "namespace", namespace)));
            lease.put("spec", spec(holder, seconds, when, when, token));
            long sent = ticker.read();
            HttpResponse<String> created = send("POST", collection, Json.write(lease), Duration.ofSeconds(10));
            if (created.statusCode() == 409) {
                return null; // someone created it first
            }
            return granted(name, created, token, sent);
        }
        expect(got, 200);
        Map<String, Object> lease = Json.object(got.body());
        Map<String, Object> meta = (Map<String, Object>) Objects.requireNonNull(lease.get("metadata"), "metadata");
        Map<String, Object> spec = (Map<String, Object>) lease.getOrDefault("spec", new LinkedHashMap<>());
        String rv = (String) meta.get("resourceVersion");
        String current = (String) spec.get("holderIdentity");
        long transitions = spec.get("leaseTransitions") instanceof Number n ? n.longValue() : 0;
        highestSeen.merge(name, transitions, Math::max);
        Observed seen = observed.get(name);
        if (seen == null || !Objects.equals(seen.resourceVersion(), rv)) {
            seen = new Observed(rv, now);
            observed.put(name, seen);
        }
        long duration = spec.get("leaseDurationSeconds") instanceof Number n ? n.longValue() : 0;
        boolean free = current == null || current.isEmpty() || current.equals(holder)
                || now - seen.at() > TimeUnit.SECONDS.toNanos(duration);
        if (!free) {
            return null;
        }
        long token = Math.max(transitions, highestSeen.getOrDefault(name, 0L)) + 1;
        lease.put("spec", spec(holder, seconds, when, when, token));
        long sent = ticker.read();
        HttpResponse<String> put = send("PUT", item(name), Json.write(lease), Duration.ofSeconds(10));
        if (put.statusCode() == 409) {
            return null; // changed since we read it: another candidate won
        }
        return granted(name, put, token, sent);
    }

    private Grant granted(String name, HttpResponse<String> r, long token, long sent) {
        expect(r, r.statusCode() == 201 ? 201 : 200);
        highestSeen.merge(name, token, Math::max);
        return new Grant(token, sent, new Handle(Json.object(r.body())));
    }

    @Override
    @SuppressWarnings("unchecked")
    public Renewal renew(String name, String holder, Grant grant, Duration ttl, Duration timeout) throws Exception {
        Handle h = (Handle) grant.handle();
        Map<String, Object> lease = new LinkedHashMap<>(h.object);
        Map<String, Object> spec = new LinkedHashMap<>((Map<String, Object>) lease.get("spec"));
        spec.put("renewTime", MICRO_TIME.format(Instant.now()));
        lease.put("spec", spec);
        // compare-and-set: the resourceVersion we last wrote; any change by anyone else makes this a 409
        HttpResponse<String> r = send("PUT", item(name), Json.write(lease), timeout);
        return switch (r.statusCode()) {
            case 200 -> {
                Map<String, Object> now = Json.object(r.body());
                Map<String, Object> s = (Map<String, Object>) Objects.requireNonNull(now.get("spec"), "spec");
                if (!holder.equals(s.get("holderIdentity"))
                        || !(s.get("leaseTransitions") instanceof Number n && n.longValue() == grant.token())) {
                    yield Renewal.REFUSED;
                }
                h.object = now;
                yield Renewal.RENEWED;
            }
            case 404 -> Renewal.REVOKED;
            case 409 -> Renewal.REFUSED;
            default -> throw new IllegalStateException("renewing Lease '" + name + "': HTTP " + r.statusCode()
                    + " " + r.body());
        };
    }

    @Override
    @SuppressWarnings("unchecked")
    public void release(String name, String holder, Grant grant) throws Exception {
        Handle h = (Handle) grant.handle();
        Map<String, Object> lease = new LinkedHashMap<>(h.object);
        Map<String, Object> spec = new LinkedHashMap<>((Map<String, Object>) lease.get("spec"));
        if (!holder.equals(spec.get("holderIdentity"))) {
            return;
        }
        // as client-go's ReleaseOnCancel: empty holder, keep leaseTransitions (the token's memory)
        spec.put("holderIdentity", "");
        spec.put("leaseDurationSeconds", 1);
        lease.put("spec", spec);
        send("PUT", item(name), Json.write(lease), Duration.ofSeconds(5)); // a 409 means it is no longer ours
    }

    @Override
    public void close() {
    }

    private static Map<String, Object> spec(String holder, int seconds, String acquire, String renew, long token) {
        Map<String, Object> spec = new LinkedHashMap<>();
        spec.put("holderIdentity", holder);
        spec.put("leaseDurationSeconds", seconds);
        spec.put("acquireTime", acquire);
        spec.put("renewTime", renew);
        spec.put("leaseTransitions", token);
        return spec;
    }

    private URI item(String name) {
        return URI.create(collection + "/" + URLEncoder.encode(name, StandardCharsets.UTF_8));
    }

    private HttpResponse<String> send(String method, URI uri, @Nullable String body, Duration timeout)
            throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(uri)
                .timeout(Duration.ofNanos(Math.max(TimeUnit.MILLISECONDS.toNanos(1), timeout.toNanos())))
                .header("Accept", "application/json")
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                        : HttpRequest.BodyPublishers.ofString(body));
        if (body != null) {
            b.header("Content-Type", "application/json");
        }
        if (bearer != null) {
            b.header("Authorization", "Bearer " + bearer);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static void expect(HttpResponse<String> r, int status) {
        if (r.statusCode() != status) {
            throw new IllegalStateException(r.request().method() + " " + r.uri() + ": HTTP " + r.statusCode() + " "
                    + r.body());
        }
    }
}
