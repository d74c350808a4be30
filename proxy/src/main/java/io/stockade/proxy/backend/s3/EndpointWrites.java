package io.stockade.proxy.backend.s3;

import java.net.URI;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

import io.stockade.proxy.fence.ScopeGuard;

/**
 * What the atomic-class backends writing through one upstream endpoint share in the process: one lock per object,
 * so that one proxy serializes each object's writes whichever policy they come through, and one {@link EtagCache},
 * which every write through any of them keeps true.
 * <p>
 * Each backend holds a {@link Lease} from its start to its {@code close()} (after a reload, when the requests
 * that started before it are done). The state lives as long as one lease on its endpoint is open: the backends of
 * a reloaded policy open theirs before the replaced ones close, so the locks and the cache carry over a reload; an
 * endpoint no policy writes through any more is released with the last lease, and the cache's capacity is always
 * the largest {@code etag-cache} of the open leases.
 */
final class EndpointWrites {
    /** The endpoints with an open lease; guarded by itself. */
    private static final Map<String, EndpointWrites> OPEN = new HashMap<>();

    private final String endpoint;
    private final ScopeGuard locks = new ScopeGuard();
    private final EtagCache cache = new EtagCache(0);
    private final List<Lease> leases = new ArrayList<>();

    private EndpointWrites(String endpoint) {
        this.endpoint = endpoint;
    }

    /** A lease on the endpoint's shared state for a backend whose policy says {@code etag-cache: etagCache}. */
    static Lease open(URI endpoint, int etagCache) {
        synchronized (OPEN) {
            EndpointWrites shared = OPEN.computeIfAbsent(endpointKey(endpoint), EndpointWrites::new);
            Lease lease = shared.new Lease(etagCache);
            shared.leases.add(lease);
            shared.resize();
            return lease;
        }
    }

    /** Whether any backend holds the endpoint's state (its locks and cache) now. */
    static boolean isOpen(URI endpoint) {
        synchronized (OPEN) {
            return OPEN.containsKey(endpointKey(endpoint));
        }
    }

    /** The endpoint as one string per store: scheme, host (lower case), port, path without a trailing slash. */
    static String endpointKey(URI endpoint) {
        int port = endpoint.getPort() >= 0 ? endpoint.getPort()
                : endpoint.getScheme().equalsIgnoreCase("https") ? 443 : 80;
        String path = Objects.requireNonNullElse(endpoint.getRawPath(), "");
        while (path.endsWith("/")) {
            path = path.substring(0, path.length() - 1);
        }
        return endpoint.getScheme().toLowerCase(Locale.ROOT) + "://" + endpoint.getHost().toLowerCase(Locale.ROOT)
                + ":" + port + path;
    }

    /** The cache holds as many entries as the largest {@code etag-cache} of the open leases asks for. */
    private void resize() {
        cache.capacity(leases.stream().mapToInt(l -> l.etagCache).max().orElse(0));
    }

    /** One backend's hold on its endpoint's state; closing it releases the state with the endpoint's last lease. */
    final class Lease implements AutoCloseable {
        private final int etagCache;
        private boolean closed;

        private Lease(int etagCache) {
            this.etagCache = etagCache;
        }

        /** The endpoint's locks, one per object. */
        ScopeGuard locks() {
            return locks;
        }

        /** The endpoint's cache of this proxy's own last writes. */
        EtagCache cache() {
            return cache;
        }

        /** Whether this backend's writes may skip the HEAD ({@code etag-cache} above 0). */
        boolean useCache() {
            return etagCache > 0;
        }

        @Override
        public void close() {
            synchronized (OPEN) {
                if (closed) {
                    return;
                }
                closed = true;
                leases.remove(this);
                if (leases.isEmpty()) {
                    OPEN.remove(endpoint);
                }
                resize();
            }
        }
    }
}
