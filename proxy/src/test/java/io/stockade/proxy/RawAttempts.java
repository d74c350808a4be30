package io.stockade.proxy;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

import io.stockade.proxy.fence.FenceAdmin;
import io.stockade.proxy.metrics.ProxyMetrics;
import io.stockade.proxy.store.FenceStores;
import io.stockade.proxy.testing.DifferentialOracle;
import io.stockade.proxy.testing.MeaningGrammar;
import io.stockade.proxy.testing.MeaningOracle;
import io.stockade.proxy.testing.RawHttp;
import io.stockade.proxy.testing.TargetGrammar;
import io.stockade.testing.Http;

/**
 * What the differential fuzzers ({@code *TargetFuzzIT}) share: how an attempt is sent, and the memory store's fences;
 * and what the meaning fuzzers ({@code *MeaningFuzzIT}) share: how a request is sent, and the proxy's decisions.
 */
public final class RawAttempts {
    private RawAttempts() {
    }

    /** Sends an attempt over a raw socket, byte for byte (its target exactly as generated). */
    public static DifferentialOracle.Result send(ProxyFixture proxy, TargetGrammar.Attempt attempt, String body)
            throws Exception {
        Http.Response r = RawHttp.send(proxy.server().port(), attempt.method() + " " + attempt.target()
                + " HTTP/1.1\r\nHost: fuzz\r\n" + (attempt.token() == null ? ""
                : "Fencing-Token: " + attempt.token() + "\r\n")
                + "Content-Length: " + body.length() + "\r\nConnection: close\r\n\r\n" + body);
        return new DifferentialOracle.Result(r.status(), r.body());
    }

    /** Sends a request over a raw socket, byte for byte; {@code HOST} in a header value is the proxy's address. */
    public static MeaningOracle.Answer sendMeaning(ProxyFixture proxy, MeaningGrammar.Request request, Long token)
            throws Exception {
        String host = "127.0.0.1:" + proxy.server().port();
        StringBuilder out = new StringBuilder(request.method()).append(' ').append(request.rawTarget())
                .append(" HTTP/1.1\r\nHost: ").append(host).append("\r\n");
        for (MeaningGrammar.Header h : request.headers()) {
            out.append(h.name()).append(": ").append(h.value().replace("HOST", host)).append("\r\n");
        }
        if (request.token() == MeaningGrammar.Token.MALFORMED) {
            out.append("Fencing-Token: 7x\r\n");
        } else if (token != null) {
            out.append("Fencing-Token: ").append(token).append("\r\n");
        }
        byte[] body = request.body().getBytes(java.nio.charset.StandardCharsets.UTF_8);
        // RawHttp writes one byte per char: the body goes as its UTF-8 bytes, which Content-Length counted
        out.append("Content-Length: ").append(body.length).append("\r\nConnection: close\r\n\r\n")
                .append(new String(body, java.nio.charset.StandardCharsets.ISO_8859_1));
        Http.Response r = RawHttp.send(proxy.server().port(), out.toString());
        return new MeaningOracle.Answer(r.status(), r.body());
    }

    /** The fences of the proxy's store (memory, etcd or postgres), every scope. */
    public static DifferentialOracle.Fences storeFences(ProxyFixture proxy) {
        FenceAdmin admin = FenceStores.admin(proxy.server().store()).orElseThrow();
        return () -> {
            Map<String, Long> out = new HashMap<>();
            admin.scopes("", 1_000_000).forEach(e -> out.put(e.scope(), e.token()));
            return out;
        };
    }

    /**
     * The proxy's decisions so far by outcome, summed over the policies named and requests no policy matched
     * ({@code stockade_decisions_total}).
     */
    public static MeaningOracle.Decisions decisions(ProxyFixture proxy, String... policies) {
        List<String> names = new java.util.ArrayList<>(List.of(policies));
        names.add(io.stockade.proxy.log.Decision.NONE);
        return () -> {
            Map<String, Double> out = new HashMap<>();
            for (ProxyMetrics.Outcome outcome : ProxyMetrics.Outcome.values()) {
                for (String policy : names) {
                    out.merge(outcome.label(), proxy.server().metrics().count(policy, outcome), Double::sum);
                }
            }
            return out;
        };
    }
}
