package io.stockade.proxy.backend.http;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import io.stockade.policy.Policy;
import io.stockade.policy.yaml.PolicyLoader;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The Destination of a COPY or MOVE, and the _method parameter, read as the http backend reads them. */
class DestinationTest {
    private static final Policy DAV = policy();

    private static Policy policy() {
        try {
            return PolicyLoader.parse("""
                    store: {type: memory, journal: ./j}
                    policies:
                      - name: dav
                        match: {path: "/dav/{dir}/{name}", methods: [GET, PUT, COPY, MOVE]}
                        scope: dav/{dir}/{name}
                        backend: {type: http, url: "http://127.0.0.1:9000/store"}
                    """, Path.of("test.yaml"), Map.of()).policies().getFirst();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static Destination.Read read(String value, String host, boolean secure) {
        return Destination.read(List.of(value), host, secure, DAV);
    }

    @ParameterizedTest
    @ValueSource(strings = {"/dav/t1/b.txt", "http://proxy:8080/dav/t1/b.txt", "HTTP://PROXY:8080/dav/t1/b.txt",
        "https://proxy:8080/dav/t1/b.txt", "/dav/t1/%62.txt", "/dav/%741/b.txt"})
    void aDestinationOnTheRequestsOwnHostIsTheCanonicalPathAndItsScope(String value) {
        Destination.Found found = assertInstanceOf(Destination.Found.class, read(value, "proxy:8080", false));
        assertEquals("/dav/t1/b.txt", found.target().path());
        assertEquals("dav/t1/b.txt", found.scope());
    }

    @Test
    void aDefaultPortWrittenOrNotIsOneAuthority() {
        assertInstanceOf(Destination.Found.class, read("http://proxy:80/dav/t1/b.txt", "proxy", false));
        assertInstanceOf(Destination.Found.class, read("http://proxy/dav/t1/b.txt", "proxy:80", false));
        assertInstanceOf(Destination.Found.class, read("https://proxy/dav/t1/b.txt", "proxy:443", true));
        assertInstanceOf(Destination.Found.class, read("https://proxy/dav/t1/b.txt", "proxy", false),
                "behind a TLS terminator the client writes https and the proxy sees http on the same name");
        assertInstanceOf(Destination.Refused.class, read("http://proxy:8080/dav/t1/b.txt", "proxy", false));
        assertInstanceOf(Destination.Refused.class, read("http://proxy/dav/t1/b.txt", "proxy:8080", false));
    }

    @ParameterizedTest
    @ValueSource(strings = {"http://other:8080/dav/t1/b.txt", "http://u@proxy:8080/dav/t1/b.txt",
        "ftp://proxy:8080/dav/t1/b.txt", "//proxy:8080/dav/t1/b.txt", "dav/t1/b.txt", "http://proxy:8080",
        "http://proxy:8080?/dav/t1/b.txt", "/dav/t1/b.txt?x", "/dav/t1/b.txt#x", "/dav/t1/../t1/b.txt",
        "/dav/t1/b.txt/", "/dav/t1", "/other/b.txt", "/dav/t1/a%2Fb", "/dav/t1/a;b", "/dav/t1/a b", ""})
    void anythingElseIsRefusedWithAReason(String value) {
        Destination.Refused refused = assertInstanceOf(Destination.Refused.class, read(value, "proxy:8080", false));
        assertFalse(refused.reason().isBlank());
    }

    @Test
    void noneOrTwoDestinationsAreRefused() {
        assertInstanceOf(Destination.Refused.class, Destination.read(List.of(), "proxy", false, DAV));
        assertInstanceOf(Destination.Refused.class,
                Destination.read(List.of("/dav/a/b", "/dav/a/c"), "proxy", false, DAV));
        assertInstanceOf(Destination.Refused.class, read("http://proxy/dav/t1/b.txt", null, false));
    }

    @ParameterizedTest
    @ValueSource(strings = {"_method", "_METHOD", "%5Fmethod", "%5fMethod", ".method", "+_method",
        "%20_method", "_method[]", "_method%5B%5D", "_method[x]", "%2Emethod"})
    void theMethodParameterIsFoundAsFrameworksFindIt(String name) {
        assertTrue(RefusedHeaders.isMethodParameter(name), name);
    }

    @ParameterizedTest
    @ValueSource(strings = {"method", "_methods", "my_method", "__method", "_meth%6Fd_", "x", ""})
    void otherParametersAreNotIt(String name) {
        assertFalse(RefusedHeaders.isMethodParameter(name), name);
    }
}
