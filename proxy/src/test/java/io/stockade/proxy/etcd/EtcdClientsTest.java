package io.stockade.proxy.etcd;

import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.stockade.policy.StoreConfig;
import io.stockade.testing.FreePorts;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/** The shared etcd client builder: the retry delay derived from the deadline, and its files read at open. */
class EtcdClientsTest {
    @TempDir
    Path dir;

    @Test
    void theRetryDelayIsBelowEveryDeadlineTheLoaderTakes() {
        assertEquals(500, EtcdClients.retryDelay(Duration.ofSeconds(3)), "jetcd's default where it fits");
        assertEquals(400, EtcdClients.retryDelay(Duration.ofSeconds(2)));
        assertEquals(60, EtcdClients.retryDelay(Duration.ofMillis(300)));
        long min = StoreConfig.Etcd.MIN_TIMEOUT.toMillis();
        for (long ms = min; ms <= 5000; ms++) {
            long delay = EtcdClients.retryDelay(Duration.ofMillis(ms));
            assertTrue(delay >= 1 && delay < ms, ms + " ms -> delay " + delay);
        }
    }

    /** Before: a deadline of 500 ms or less made every call throw "maxDuration must be > the delay". */
    @Test
    void aShortDeadlineFailsLikeAnOutageNotWithTheRetryPolicysComplaint() throws Exception {
        Duration timeout = StoreConfig.Etcd.MIN_TIMEOUT;
        try (Client client = EtcdClients.open(List.of(URI.create("http://127.0.0.1:" + FreePorts.next())), timeout,
                null, null, null, null, "store")) {
            try {
                client.getKVClient().get(ByteSequence.from("k", StandardCharsets.UTF_8)).get(2, TimeUnit.SECONDS);
                fail("nothing listens there");
            } catch (ExecutionException | TimeoutException expected) {
                // an outage, as the callers map it to 503
            }
        }
    }

    @Test
    void anEmptyOrMissingPasswordFileIsNamed() throws Exception {
        Path empty = Files.createFile(dir.resolve("empty"));
        IOException e = assertThrows(IOException.class, () -> EtcdClients.open(
                List.of(URI.create("http://127.0.0.1:2379")), Duration.ofSeconds(1), null, "u", null, empty,
                "fence.verify"));
        assertTrue(e.getMessage().startsWith("fence.verify.password-file: ") && e.getMessage().contains("empty"),
                e.getMessage());
        e = assertThrows(IOException.class, () -> EtcdClients.open(List.of(URI.create("http://127.0.0.1:2379")),
                Duration.ofSeconds(1), null, "u", null, dir.resolve("nope"), "store"));
        assertTrue(e.getMessage().startsWith("store.password-file: cannot read "), e.getMessage());
    }
}
