package io.stockade.client;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import com.sun.net.httpserver.HttpServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Token attachment for java.net.http, with a hand-driven lease. */
class FencedHttpClientTest {

    private final FakeTicker ticker = new FakeTicker();
    private final FakeLeaseService service = new FakeLeaseService(ticker);
    private final List<String> tokens = new CopyOnWriteArrayList<>();
    private final CountDownLatch slow = new CountDownLatch(1);
    private HttpServer server;
    private URI uri;

    @BeforeEach
    void start() throws Exception {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext("/", ex -> {
            tokens.add(String.valueOf(ex.getRequestHeaders().get("Fencing-Token")));
            if (ex.getRequestURI().getPath().equals("/slow")) {
                try {
                    slow.await(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            ex.sendResponseHeaders(204, -1);
            ex.close();
        });
        server.setExecutor(java.util.concurrent.Executors.newCachedThreadPool());
        server.start();
        uri = URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/files/a");
    }

    @AfterEach
    void stop() {
        slow.countDown();
        server.stop(0);
    }

    private WatchedLease lease() throws Exception {
        LeaseService.Grant g = service.acquire("files/a", "me", Duration.ofSeconds(15), Duration.ZERO);
        return new WatchedLease("files/a", "me", service, g, ticker, Duration.ofSeconds(15), Duration.ofSeconds(10),
                null, 0);
    }

    @Test
    void everyRequestCarriesTheTokenAndAnOldHeaderIsReplaced() throws Exception {
        WatchedLease lease = lease();
        HttpClient http = FencedHttpClient.of(HttpClient.newHttpClient(), lease, Duration.ofSeconds(2));
        HttpResponse<Void> r = http.send(HttpRequest.newBuilder(uri).header("fencing-token", "1")
                .PUT(HttpRequest.BodyPublishers.ofString("x")).build(), HttpResponse.BodyHandlers.discarding());
        assertEquals(204, r.statusCode());
        http.sendAsync(HttpRequest.newBuilder(uri).DELETE().build(), HttpResponse.BodyHandlers.discarding()).join();
        assertEquals(List.of("[" + lease.token() + "]", "[" + lease.token() + "]"), tokens);
    }

    @Test
    void nothingIsSentPastThePointOfNoReturnOrAfterTheLoss() throws Exception {
        WatchedLease lease = lease();
        HttpClient http = FencedHttpClient.of(HttpClient.newHttpClient(), lease, Duration.ofSeconds(2));
        ticker.advance(Duration.ofMillis(13_500));
        HttpRequest put = HttpRequest.newBuilder(uri).PUT(HttpRequest.BodyPublishers.ofString("x")).build();
        assertEquals(LossReason.EXPIRED, assertThrows(LeaseLostException.class,
                () -> http.send(put, HttpResponse.BodyHandlers.discarding())).reason());
        lease.close();
        assertEquals(LossReason.RELEASED, assertThrows(LeaseLostException.class,
                () -> http.sendAsync(put, HttpResponse.BodyHandlers.discarding())).reason());
        assertTrue(tokens.isEmpty());
    }

    @Test
    void inFlightAsyncRequestsAreCancelledWhenTheLeaseIsLost() throws Exception {
        WatchedLease lease = lease();
        HttpClient http = FencedHttpClient.of(HttpClient.newHttpClient(), lease, Duration.ZERO);
        CompletableFuture<HttpResponse<Void>> f = http.sendAsync(HttpRequest.newBuilder(
                uri.resolve("/slow")).PUT(HttpRequest.BodyPublishers.ofString("x")).build(),
                HttpResponse.BodyHandlers.discarding());
        service.then(LeaseService.Renewal.REFUSED, Duration.ZERO);
        lease.tick();
        // java.net.http aborts the exchange and completes its future with a CancellationException
        assertTrue(f.isDone(), () -> "still in flight: " + f);
        Throwable e = assertThrows(Throwable.class, f::join);
        while (!(e instanceof java.util.concurrent.CancellationException) && e.getCause() != null) {
            e = e.getCause();
        }
        assertTrue(e instanceof java.util.concurrent.CancellationException, String.valueOf(e));
    }
}
