package io.stockade.proxy.pipeline;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.junit.jupiter.api.Assertions.assertTrue;

class RequestPathTest {
    @ParameterizedTest
    @ValueSource(strings = {"/", "/files/a.txt", "/files/a/b/c", "/files/with%20space", "/files/%C3%A9t%C3%A9",
            "/files/a+b", "/files/.hidden", "/files/a..b"})
    void normalPathsPass(String path) {
        assertTrue(RequestPath.problem(path).isEmpty(), path);
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "files", "/files//a", "/files/a/", "/files/./a", "/files/../a", "/files/%2e",
            "/files/%2E%2e", "/files/a%2fb", "/files/a%2Fb", "/files/a%5cb", "/files/a%00", "/files/%0a",
            "/files/%zz", "/files/%4", "/files/a\\b"})
    void pathsWithAnotherSpellingAreRefused(String path) {
        assertTrue(RequestPath.problem(path).isPresent(), path);
    }
}
