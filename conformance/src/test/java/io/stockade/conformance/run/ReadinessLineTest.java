package io.stockade.conformance.run;

import java.net.URI;
import java.util.Optional;

import io.stockade.testing.ChildProxy;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The proxy's readiness line is parsed twice: by the suite's {@link ProxyProcess} (main code, which must not depend
 * on test-tools) and by the tests' launcher, test-tools' {@link ChildProxy}. Both must read the same lines the same
 * way, so that neither drifts from the other unnoticed.
 */
class ReadinessLineTest {

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', nullValues = "NONE", value = {
        "Stockade listening on http://127.0.0.1:8080                          | http://127.0.0.1:8080",
        "Stockade listening on http://[::1]:8443                              | http://[::1]:8443",
        "Stockade listening on http://proxy.example.internal:9000             | http://proxy.example.internal:9000",
        "Stockade listening on http://0.0.0.0:8081                            | http://127.0.0.1:8081",
        "Stockade listening on http://[::]:8082                               | http://[::1]:8082",
        "12:00:01 INFO main Stockade listening on http://localhost:1234 (2 policies) | http://localhost:1234",
        "Stockade management (/metrics, /admin, /health) on http://127.0.0.1:9091 | NONE",
        "Stockade listening on http://127.0.0.1                               | NONE",
        "stockade: cannot listen on 127.0.0.1:8080: address in use            | NONE",
    })
    void bothParsersReadTheLineAlike(String line, String expected) {
        Optional<URI> want = Optional.ofNullable(expected).map(URI::create);
        assertEquals(want, Optional.ofNullable(ProxyProcess.readiness(line + "\n")), "ProxyProcess");
        assertEquals(want, ChildProxy.readiness(line + "\n"), "ChildProxy");
    }
}
