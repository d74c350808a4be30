package io.stockade.proxy.backend.s3;

import java.net.URI;
import java.time.Duration;
import java.util.List;

import io.stockade.policy.BackendConfig;
import io.stockade.proxy.backend.Backend;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link EndpointWrites}: the locks and ETag cache the atomic-class backends of one endpoint share live as long as one
 * of them is open. A reload opens the new backends, then closes the replaced ones ({@code Backend.close}, after the
 * drain): what they shared carries over while the endpoint is still written through, and is released with its last
 * backend, the cache shrinking to what the open policies ask for.
 */
class S3EndpointWritesTest {
    /** An endpoint no other test uses (the state is per process); nothing is sent to it. */
    private static final URI ENDPOINT = URI.create("http://127.0.0.1:9/endpoint-writes-test");

    private static BackendConfig.S3 atomic(int etagCache) {
        return new BackendConfig.S3(ENDPOINT, "us-east-1", "ak", "sk", true, true, BackendConfig.Auth.NONE, List.of(),
                null, BackendConfig.FenceScope.OBJECT, 1, Duration.ofSeconds(5), 3, 4, null, false, false,
                BackendConfig.UnsignedReads.REFUSE, etagCache);
    }

    @Test
    void aReloadKeepsTheSharedStateWhileTheEndpointIsWrittenThroughAndReleasesItWithTheLastBackend() {
        assertFalse(EndpointWrites.isOpen(ENDPOINT));
        Backend before = S3Type.open(atomic(100));
        EtagCache cache;
        try (EndpointWrites.Lease look = EndpointWrites.open(URI.create("http://127.0.0.1:9/endpoint-writes-test/"),
                0)) {
            cache = look.cache();
            cache.wrote("b/k", "\"e1\"", 7, false);
            assertTrue(cache.enabled());
            // the reload: the new policy (etag-cache: 0 now) opens before the replaced backend is closed
            Backend after = S3Type.open(atomic(0));
            assertEquals(1, cache.size());
            before.close();
            assertTrue(EndpointWrites.isOpen(ENDPOINT));
            assertFalse(cache.enabled(), "no open policy asks for a cache any more");
            assertEquals(0, cache.size());
            after.close();
            assertTrue(EndpointWrites.isOpen(ENDPOINT), "this test's own lease is still open");
        }
        assertFalse(EndpointWrites.isOpen(ENDPOINT), "the last lease released the endpoint's state");
        try (EndpointWrites.Lease again = EndpointWrites.open(ENDPOINT, 10)) {
            assertNotSame(cache, again.cache());
            assertEquals(0, again.cache().size());
            again.close(); // closing twice counts once
            assertFalse(EndpointWrites.isOpen(ENDPOINT));
        }
    }

    @Test
    void oneEndpointIsOneStateHoweverItsUriIsSpelled() {
        try (EndpointWrites.Lease a = EndpointWrites.open(URI.create("http://LOCALHOST/spelled"), 1);
             EndpointWrites.Lease b = EndpointWrites.open(URI.create("http://localhost:80/spelled//"), 0)) {
            assertSame(a.cache(), b.cache());
            assertSame(a.locks(), b.locks());
            assertTrue(a.useCache());
            assertFalse(b.useCache());
        }
        assertFalse(EndpointWrites.isOpen(URI.create("http://localhost/spelled")));
    }
}
