package io.stockade.client;

import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

import org.junit.jupiter.api.Test;
import software.amazon.awssdk.core.SdkRequest;
import software.amazon.awssdk.core.interceptor.Context;
import software.amazon.awssdk.core.interceptor.ExecutionAttributes;
import software.amazon.awssdk.http.SdkHttpFullRequest;
import software.amazon.awssdk.http.SdkHttpMethod;
import software.amazon.awssdk.http.SdkHttpRequest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Token attachment for AWS SDK v2, driven through the interceptor's hooks as the SDK calls them. */
class FencingInterceptorTest {

    private final FakeTicker ticker = new FakeTicker();
    private final FakeLeaseService service = new FakeLeaseService(ticker);

    private WatchedLease lease() throws Exception {
        LeaseService.Grant g = service.acquire("bucket/key", "me", Duration.ofSeconds(15), Duration.ZERO);
        return new WatchedLease("bucket/key", "me", service, g, ticker, Duration.ofSeconds(15),
                Duration.ofSeconds(10), null, 0);
    }

    private static Context.ModifyHttpRequest context(SdkHttpRequest http) {
        return new Context.ModifyHttpRequest() {
            @Override
            public SdkRequest request() {
                return null;
            }

            @Override
            public SdkHttpRequest httpRequest() {
                return http;
            }

            @Override
            public Optional<software.amazon.awssdk.core.sync.RequestBody> requestBody() {
                return Optional.empty();
            }

            @Override
            public Optional<software.amazon.awssdk.core.async.AsyncRequestBody> asyncRequestBody() {
                return Optional.empty();
            }
        };
    }

    @Test
    void theTokenIsAddedToTheHttpRequest() throws Exception {
        WatchedLease lease = lease();
        SdkHttpRequest http = SdkHttpFullRequest.builder().method(SdkHttpMethod.PUT)
                .uri(URI.create("http://stockade:8080/bucket/key")).build();
        SdkHttpRequest out = FencingInterceptor.of(lease, Duration.ofSeconds(1))
                .modifyHttpRequest(context(http), new ExecutionAttributes());
        assertEquals(List.of(Long.toString(lease.token())), out.headers().get("Fencing-Token"));
    }

    @Test
    void aLostLeaseOrOnePastItsPointOfNoReturnStopsTheRequestAndItsRetries() throws Exception {
        WatchedLease lease = lease();
        FencingInterceptor interceptor = FencingInterceptor.of(lease, Duration.ofSeconds(5));
        SdkHttpRequest http = SdkHttpFullRequest.builder().method(SdkHttpMethod.PUT)
                .uri(URI.create("http://stockade:8080/bucket/key")).build();
        ticker.advance(Duration.ofSeconds(11));
        assertThrows(LeaseLostException.class, () -> interceptor.modifyHttpRequest(context(http),
                new ExecutionAttributes()));
        assertThrows(LeaseLostException.class, () -> interceptor.beforeTransmission(null, new ExecutionAttributes()));
    }

    @Test
    void aSignerWithAnotherHeaderSignsIntoThatHeader() throws Exception {
        WatchedLease lease = lease();
        SdkHttpRequest http = SdkHttpFullRequest.builder().method(SdkHttpMethod.PUT)
                .uri(URI.create("http://stockade:8080/bucket/key")).build();
        TokenSigner signer = TokenSigner.hmacSha256("k1", "0123456789abcdef0123456789abcdef")
                .withHeader("X-Fence-Signature");
        SdkHttpRequest out = FencingInterceptor.of(lease, Duration.ofSeconds(1)).signed("bucket/key", signer)
                .modifyHttpRequest(context(http), new ExecutionAttributes());
        assertEquals(1, out.headers().get("X-Fence-Signature").size());
        assertTrue(out.headers().get("X-Fence-Signature").get(0).startsWith("v1; kid=k1; exp="));
        assertEquals(null, out.headers().get(TokenSigner.HEADER));
        assertEquals(TokenSigner.HEADER, TokenSigner.hmacSha256("k1", "0123456789abcdef0123456789abcdef").header());

        assertThrows(IllegalArgumentException.class, () -> signer.withHeader("X Fence"));
        assertThrows(IllegalArgumentException.class, () -> FencingInterceptor.of(lease, Duration.ofSeconds(1))
                .signed("bucket/key", signer.withHeader("fencing-token")));
    }
}
