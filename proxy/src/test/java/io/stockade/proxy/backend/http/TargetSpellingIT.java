package io.stockade.proxy.backend.http;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.TestPolicies;
import io.stockade.proxy.testing.RawHttp;
import io.stockade.proxy.testing.ReceivedRequest;
import io.stockade.proxy.testing.TestUpstream;
import io.stockade.testing.Http;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The request-target bypasses a hostile client found (the request-target review), each replayed byte for byte against
 * the http
 * backend in front of a recording upstream: what the upstream received is compared with the scope the fence
 * decided on, and every refusal is checked to have reached nothing and moved no fence.
 */
class TargetSpellingIT {
    @TempDir
    Path dir;
    TestUpstream upstream;
    ProxyFixture proxy;

    @BeforeEach
    void start() throws Exception {
        upstream = TestUpstream.start();
        proxy = ProxyFixture.start(dir.resolve("j"), TestPolicies.memoryStore()
                .policy("docs", "/docs/{dir}/{name}", "docs/{dir}/{name}").http("${UPSTREAM}/store", "settle: 1ms")
                .policy("objects", "/objects/{bucket}/{key}", "objects/{bucket}/{key}")
                .http("${UPSTREAM}/store", "conditional: if-match").yaml(),
                Map.of("UPSTREAM", upstream.baseUri().toString().replaceAll("/$", "")));
    }

    @AfterEach
    void stop() {
        proxy.close();
        upstream.close();
    }

    Http.Response raw(String method, String target, String token, String body) throws Exception {
        return RawHttp.send(proxy.server().port(), method + " " + target + " HTTP/1.1\r\nHost: t\r\n"
                + (token == null ? "" : "Fencing-Token: " + token + "\r\n")
                + "Content-Length: " + body.length() + "\r\nConnection: close\r\n\r\n" + body);
    }

    OptionalLong fence(String scope) throws Exception {
        return proxy.server().store().get(scope).map(s -> OptionalLong.of(s.token())).orElse(OptionalLong.empty());
    }

    ReceivedRequest last() {
        List<ReceivedRequest> all = upstream.received();
        return all.get(all.size() - 1);
    }

    @Test
    void dotSegmentsInTheQueryNeverMoveTheWrite() throws Exception {
        assertEquals(201, raw("PUT", "/docs/t6/victim", "100", "new holder").status());
        assertEquals(409, raw("PUT", "/docs/t6/victim", "50", "zombie").status());
        int before = upstream.requestCount();
        // Formerly: 200, and the upstream received PUT /docs/t6/victim from the zombie.
        Http.Response r = raw("PUT", "/docs/zz/a?x=/../../t6/victim", "50", "zombie");
        assertTrue(r.status() / 100 == 2, r.status() + " " + r.body());
        assertEquals(before + 1, upstream.requestCount());
        assertEquals("/store/docs/zz/a", last().path(), "the write went where its scope says");
        assertEquals("x=/../../t6/victim", last().query(), "the query went as it came");
        assertEquals(Optional.of("new holder"), upstream.contentText("/store/docs/t6/victim"));
        assertEquals(OptionalLong.of(100), fence("docs/t6/victim"));
        assertEquals(OptionalLong.of(50), fence("docs/zz/a"));
    }

    @Test
    void aConditionalWriteCannotBeAimedAtAnotherKeyThroughTheQuery() throws Exception {
        assertEquals(201, raw("PUT", "/objects/b/k20", "7", "k20 v7").status());
        Http.Response r = raw("PUT", "/objects/b/zz?/../k20", "3", "overwrite k20?");
        assertTrue(r.status() / 100 == 2, r.status() + " " + r.body());
        assertEquals("/store/objects/b/zz", last().path());
        assertEquals(Optional.of("k20 v7"), upstream.contentText("/store/objects/b/k20"));
    }

    @Test
    void theQueryCannotEscapeTheUpstreamPrefix() throws Exception {
        Http.Response r = raw("PUT", "/objects/b/new?/../../../../escaped", "1", "where?");
        assertTrue(r.status() / 100 == 2, r.status() + " " + r.body());
        for (ReceivedRequest seen : upstream.received()) {
            assertTrue(seen.path().startsWith("/store/"), seen.method() + " " + seen.path());
        }
        assertEquals(Optional.empty(), upstream.contentText("/escaped"));
        assertEquals(Optional.of("where?"), upstream.contentText("/store/objects/b/new"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"/docs/t10;z/a", "/docs/t10/a;z", "/docs/t10;/a", "/docs/;/t10/a"})
    void pathParametersAreRefusedBeforeTheFence(String target) throws Exception {
        assertEquals(201, raw("PUT", "/docs/t10/a", "100", "holder").status());
        int before = upstream.requestCount();
        for (String method : new String[]{"PUT", "DELETE"}) {
            Http.Response r = raw(method, target, "50", "zombie");
            assertEquals(400, r.status(), r.body());
            assertTrue(r.body().contains("path parameters are refused"), r.body());
        }
        assertEquals(before, upstream.requestCount(), "nothing reached the upstream");
        assertEquals(Optional.of("holder"), upstream.contentText("/store/docs/t10/a"));
        assertEquals(OptionalLong.of(100), fence("docs/t10/a"));
        assertEquals(OptionalLong.empty(), fence("docs/t10;z/a"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"/docs/t6/victi%6D", "/docs/t6/%76ictim", "/docs/%746/victim"})
    void anotherSpellingOfTheSameResourceMeetsTheSameFence(String target) throws Exception {
        assertEquals(201, raw("PUT", "/docs/t6/victim", "100", "holder").status());
        int before = upstream.requestCount();
        Http.Response r = raw("PUT", target, "50", "zombie");
        assertEquals(409, r.status(), r.body());
        assertEquals(before, upstream.requestCount());
        assertEquals(Optional.of("holder"), upstream.contentText("/store/docs/t6/victim"));
    }

    @Test
    void plusAndItsEscapeAreOneResourceAndReachTheUpstreamSpelledOneWay() throws Exception {
        assertEquals(201, raw("PUT", "/docs/d/a+b", "10", "ten").status());
        assertEquals("/store/docs/d/a%2Bb", last().path());
        int before = upstream.requestCount();
        assertEquals(409, raw("PUT", "/docs/d/a%2Bb", "5", "five").status());
        assertEquals(409, raw("PUT", "/docs/d/a%2bb", "5", "five").status());
        assertEquals(before, upstream.requestCount());
        assertEquals(201, raw("PUT", "/docs/d/a%20b", "5", "space").status(), "a space is another resource");
        assertEquals("/store/docs/d/a%20b", last().path());
        assertEquals(Optional.of("ten"), upstream.contentText("/store/docs/d/a%2Bb"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"/docs/t6/%2e%2e/victim", "/docs/t6/./victim", "/docs/t6/a%2Fvictim", "/docs/t6//victim",
            "/docs/t6/victim/", "/docs/t6/vi%00ctim", "/docs/t6/%ZZ", "/docs/t6/%FF", "/docs/t6/a%5Cb",
            "/docs/t6/victim#frag", "http://evil/docs/t6/victim"})
    void ambiguousSpellingsAreRefusedBeforeTheFenceAndReachNothing(String target) throws Exception {
        assertEquals(201, raw("PUT", "/docs/t6/victim", "100", "holder").status());
        int before = upstream.requestCount();
        Http.Response r = raw("PUT", target, "500", "zombie");
        assertEquals(400, r.status(), target + ": " + r.body());
        assertEquals(before, upstream.requestCount());
        assertEquals(OptionalLong.of(100), fence("docs/t6/victim"));
        assertEquals(Optional.of("holder"), upstream.contentText("/store/docs/t6/victim"));
    }
}
