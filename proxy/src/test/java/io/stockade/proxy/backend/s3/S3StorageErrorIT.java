package io.stockade.proxy.backend.s3;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.S3Fixture;
import io.stockade.proxy.metrics.ProxyMetrics.Outcome;
import io.stockade.testing.Http;

import com.github.tomakehurst.wiremock.WireMockServer;
import com.github.tomakehurst.wiremock.core.WireMockConfiguration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.head;
import static com.github.tomakehurst.wiremock.client.WireMock.put;
import static com.github.tomakehurst.wiremock.client.WireMock.putRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathEqualTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An S3 store's 500 to a write the fence admitted does not say whether the write was applied (S3 documents
 * {@code InternalError} as "may or may not have succeeded"; the hostile round saw the object stored behind it): the
 * proxy answers 504 {@code UnknownOutcome} and counts it so, where it relayed the 500 as a refusal. A 503
 * {@code SlowDown} says "not processed" and is relayed. Both classes; the store is WireMock, which answers as S3
 * would.
 */
class S3StorageErrorIT {
    private static final String ERROR = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code><Message>"
            + "%s</Message></Error>";
    private static WireMockServer store;
    private static ProxyFixture atomic;
    private static ProxyFixture serialized;

    @BeforeAll
    static void start() throws Exception {
        Path dir = Files.createTempDirectory("stockade-s3-errors");
        store = new WireMockServer(WireMockConfiguration.options().bindAddress("127.0.0.1").dynamicPort());
        store.start();
        store.stubFor(head(urlPathEqualTo("/b/failed")).willReturn(aResponse().withStatus(404)));
        store.stubFor(head(urlPathEqualTo("/b/busy")).willReturn(aResponse().withStatus(404)));
        store.stubFor(put(urlPathEqualTo("/b/failed")).willReturn(aResponse().withStatus(500)
                .withHeader("Content-Type", "application/xml")
                .withBody(ERROR.formatted("InternalError", "We encountered an internal error. Please try again."))));
        store.stubFor(put(urlPathEqualTo("/b/busy")).willReturn(aResponse().withStatus(503)
                .withHeader("Content-Type", "application/xml")
                .withBody(ERROR.formatted("SlowDown", "Please reduce your request rate."))));
        Map<String, String> vars = new HashMap<>(Map.of("S3PORT", Integer.toString(store.port())));
        atomic = ProxyFixture.start(dir.resolve("journal-atomic"), S3Fixture.policy(Map.of()), vars);
        vars.put("CONDITIONAL_WRITES", "false");
        vars.put("S3_TIMEOUT", "500ms");
        serialized = ProxyFixture.start(dir.resolve("journal-serialized"), S3Fixture.policy(Map.of()), vars);
        Thread.sleep(600); // the serialized class opens after its settle time (its timeout) after start
    }

    @AfterAll
    static void stop() {
        for (ProxyFixture proxy : new ProxyFixture[] {atomic, serialized}) {
            if (proxy != null) {
                proxy.close();
            }
        }
        if (store != null) {
            store.stop();
        }
    }

    private static Http.Response putObject(ProxyFixture proxy, String key, long token) throws Exception {
        return new S3Fixture.Raw("PUT", "/b/" + key).header("Fencing-Token", Long.toString(token)).body("v" + token)
                .send(proxy.server().port());
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void aStoresInternalErrorToAnAdmittedWriteIsAnUnknownOutcome(boolean atomicClass) throws Exception {
        ProxyFixture proxy = atomicClass ? atomic : serialized;
        int before = store.findAll(putRequestedFor(urlPathEqualTo("/b/failed"))).size();
        Http.Response r = putObject(proxy, "failed", 7);
        assertEquals(before + 1, store.findAll(putRequestedFor(urlPathEqualTo("/b/failed"))).size(),
                "the write reached the store");
        assertEquals(504, r.status(), r.body());
        assertTrue(r.body().contains("<Code>UnknownOutcome</Code>"), r.body());
        assertTrue(r.body().contains("the storage answered 500 InternalError"), r.body());
        assertFalse(r.body().contains("We encountered an internal error"), "the store's 500 is not relayed");
        assertEquals(1, proxy.counted("s3", Outcome.UNKNOWN_OUTCOME, 1));
        // the store answered: nothing can land later, so the scope is not quarantined
        Http.Response again = putObject(proxy, "failed", 7);
        assertEquals(504, again.status(), "sent again, not refused as quarantined: " + again.body());
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void aStoresSlowDownSaysNothingWasWrittenAndIsRelayed(boolean atomicClass) throws Exception {
        Http.Response r = putObject(atomicClass ? atomic : serialized, "busy", 7);
        assertEquals(503, r.status(), r.body());
        assertTrue(r.body().contains("<Code>SlowDown</Code>"), r.body());
    }
}
