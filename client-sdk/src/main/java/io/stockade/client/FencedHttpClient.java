package io.stockade.client;

import java.io.IOException;
import java.net.Authenticator;
import java.net.CookieHandler;
import java.net.ProxySelector;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;

import org.jspecify.annotations.Nullable;

/**
 * An {@link HttpClient} that adds the lease's token as {@code Fencing-Token} to every request and refuses to send
 * once the lease is lost or has less than the budget left (the point of no return). Use it wherever an
 * {@code HttpClient} is expected; the write code stays as it is.
 *
 * <pre>{@code
 * HttpClient http = FencedHttpClient.of(HttpClient.newHttpClient(), lease, Duration.ofSeconds(2));
 * http.send(HttpRequest.newBuilder(URI.create("http://stockade:8080/files/report.txt"))
 *         .PUT(BodyPublishers.ofString("v5")).build(), BodyHandlers.ofString());   // Fencing-Token: <token>
 * }</pre>
 *
 * <p>Asynchronous requests still in flight when the lease is lost are cancelled ({@link CompletableFuture#cancel}).
 * A request already on the wire may still arrive; Stockade rejects it if a newer holder has written since.
 */
public final class FencedHttpClient extends HttpClient {

    /** The header Stockade checks by default. */
    public static final String HEADER = "Fencing-Token";

    private final HttpClient delegate;
    private final Lease lease;
    private final Duration budget;
    private final String header;
    /** The scope signatures are made for, or {@code null}: unsigned. */
    private final @Nullable String scope;
    private final @Nullable TokenSigner signer;
    private final Set<CompletableFuture<?>> inFlight = ConcurrentHashMap.newKeySet();

    private FencedHttpClient(HttpClient delegate, Lease lease, Duration budget, String header,
                             @Nullable String scope, @Nullable TokenSigner signer) {
        this.delegate = delegate;
        this.lease = lease;
        this.budget = budget;
        this.header = header;
        this.scope = scope;
        this.signer = signer;
        lease.addListener((l, reason) -> inFlight.forEach(f -> f.cancel(true)));
    }

    /**
     * This client, also signing each token (in the signer's {@link TokenSigner#header()}, {@value TokenSigner#HEADER}
     * by default) for a policy with {@code fence.verify: {kind: hmac}}. The signature expires when the lease would.
     *
     * @param scope  the fence scope the proxy renders for the requests this client sends (the lease's scope:
     *               the fence scope must equal the lock scope)
     * @param signer the signer with the shared key
     * @return a fenced client that signs
     * @throws IllegalArgumentException if the signer's header is this client's token header
     */
    public FencedHttpClient signed(String scope, TokenSigner signer) {
        Objects.requireNonNull(scope, "scope");
        Objects.requireNonNull(signer, "signer");
        if (signer.header().equalsIgnoreCase(header)) {
            throw new IllegalArgumentException("the signature header must differ from the token header " + header);
        }
        return new FencedHttpClient(delegate, lease, budget, header, scope, signer);
    }

    /**
     * Wraps {@code client}, adding {@code Fencing-Token}.
     *
     * @param client the client that sends
     * @param lease  the lease whose token is attached
     * @param budget the validity that must remain when a request is sent (cover the request's duration)
     * @return the fenced client
     * @throws IllegalArgumentException if {@code budget} is negative
     */
    public static FencedHttpClient of(HttpClient client, Lease lease, Duration budget) {
        return of(client, lease, budget, HEADER);
    }

    /**
     * Wraps {@code client}, adding the token in {@code header} (for a policy whose {@code fence.header} differs).
     *
     * @param client the client that sends
     * @param lease  the lease whose token is attached
     * @param budget the validity that must remain when a request is sent
     * @param header the header name
     * @return the fenced client
     * @throws IllegalArgumentException if {@code budget} is negative or {@code header} is blank
     */
    public static FencedHttpClient of(HttpClient client, Lease lease, Duration budget, String header) {
        Objects.requireNonNull(client, "client");
        Objects.requireNonNull(lease, "lease");
        if (budget.isNegative()) {
            throw new IllegalArgumentException("budget must not be negative: " + budget);
        }
        if (header == null || header.isBlank()) {
            throw new IllegalArgumentException("header must not be blank");
        }
        return new FencedHttpClient(client, lease, budget, header, null, null);
    }

    /**
     * Sends {@code request} with the token attached.
     *
     * @throws LeaseLostException if the lease is lost or past its point of no return (nothing was sent)
     */
    @Override
    public <T> HttpResponse<T> send(HttpRequest request, HttpResponse.BodyHandler<T> handler)
            throws IOException, InterruptedException {
        return delegate.send(fenced(request), handler);
    }

    /**
     * Sends {@code request} asynchronously with the token attached; the future is cancelled if the lease is lost
     * before the answer.
     *
     * @throws LeaseLostException if the lease is lost or past its point of no return (nothing was sent)
     */
    @Override
    public <T> CompletableFuture<HttpResponse<T>> sendAsync(HttpRequest request,
                                                            HttpResponse.BodyHandler<T> handler) {
        return track(delegate.sendAsync(fenced(request), handler));
    }

    /**
     * As {@link #sendAsync(HttpRequest, HttpResponse.BodyHandler)}, with a push-promise handler.
     *
     * @throws LeaseLostException if the lease is lost or past its point of no return (nothing was sent)
     */
    @Override
    public <T> CompletableFuture<HttpResponse<T>> sendAsync(HttpRequest request, HttpResponse.BodyHandler<T> handler,
                                                            HttpResponse.PushPromiseHandler<T> push) {
        return track(delegate.sendAsync(fenced(request), handler, push));
    }

    @SuppressWarnings("CollectionUndefinedEquality") // a future is in inFlight by identity, as meant
    private <T> CompletableFuture<T> track(CompletableFuture<T> f) {
        inFlight.add(f);
        // the caller holds f itself, whose failure it sees; the stage that only takes f out again is not needed
        var unused = f.whenComplete((r, e) -> inFlight.remove(f));
        if (!lease.isValid()) {
            f.cancel(true); // lost between the checkpoint and the registration
        }
        return f;
    }

    private HttpRequest fenced(HttpRequest request) {
        lease.checkpoint(budget);
        String signatureHeader = signer == null ? TokenSigner.HEADER : signer.header();
        HttpRequest.Builder b = HttpRequest.newBuilder(request, (name, value) -> !name.equalsIgnoreCase(header)
                        && !name.equalsIgnoreCase(signatureHeader))
                .header(header, Long.toString(lease.token()));
        if (signer != null) {
            b.header(signatureHeader, signer.sign(Objects.requireNonNull(scope), lease)); // set with the signer
        }
        return b.build();
    }

    @Override
    public Optional<CookieHandler> cookieHandler() {
        return delegate.cookieHandler();
    }

    @Override
    public Optional<Duration> connectTimeout() {
        return delegate.connectTimeout();
    }

    @Override
    public Redirect followRedirects() {
        return delegate.followRedirects();
    }

    @Override
    public Optional<ProxySelector> proxy() {
        return delegate.proxy();
    }

    @Override
    public SSLContext sslContext() {
        return delegate.sslContext();
    }

    @Override
    public SSLParameters sslParameters() {
        return delegate.sslParameters();
    }

    @Override
    public Optional<Authenticator> authenticator() {
        return delegate.authenticator();
    }

    @Override
    public Version version() {
        return delegate.version();
    }

    @Override
    public Optional<Executor> executor() {
        return delegate.executor();
    }

    @Override
    public void shutdown() {
        delegate.shutdown();
    }

    @Override
    public boolean awaitTermination(Duration duration) throws InterruptedException {
        return delegate.awaitTermination(duration);
    }

    @Override
    public boolean isTerminated() {
        return delegate.isTerminated();
    }

    @Override
    public void shutdownNow() {
        delegate.shutdownNow();
    }

    @Override
    public void close() {
        delegate.close();
    }

}
