package io.stockade.proxy.pipeline;

import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.TestPolicies;
import io.stockade.proxy.metrics.ProxyMetrics.Outcome;
import io.stockade.proxy.testing.RawHttp;
import io.stockade.proxy.testing.TestUpstream;
import io.stockade.testing.Http;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The hostile-load report's answers and counts that said something untrue: a client gone mid-body was logged and
 * counted as an accepted write; a Fencing-Token of only white space was answered as missing (428) where it is
 * there and malformed (400).
 */
class HonestOutcomesIT {
    @TempDir
    Path dir;

    /** Declares a long body, sends part of it and stops sending: the proxy cannot read the body to its end. */
    private static void cutShort(int port, String path) throws Exception {
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(10_000);
            OutputStream out = s.getOutputStream();
            out.write(("PUT " + path + " HTTP/1.1\r\nHost: x\r\nFencing-Token: 5\r\nContent-Length: 100000\r\n\r\n"
                    + "a".repeat(1000)).getBytes(StandardCharsets.US_ASCII));
            out.flush();
            s.shutdownOutput(); // gone: no more bytes will come
            s.getInputStream().readAllBytes();
        }
    }

    @Test
    void aClientGoneMidBodyIsCountedAsTheRefusalItIsNotAsAnAcceptedWrite() throws Exception {
        try (TestUpstream upstream = TestUpstream.start();
             ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), TestPolicies.docsOverHttp("settle: 100ms"),
                     Map.of("UPSTREAM", upstream.baseUri().toString()))) {
            Thread.sleep(200); // past the settle after start
            cutShort(proxy.server().port(), "/docs/a");
            assertEquals(1.0, proxy.counted("docs", Outcome.BAD_REQUEST, 1), "counted as bad_request: "
                    + java.util.Arrays.stream(Outcome.values()).filter(o -> proxy.server().metrics().count("docs", o)
                    > 0).toList());
            assertEquals(0.0, proxy.server().metrics().count("docs", Outcome.ACCEPTED), "never as accepted");
            assertEquals(0, upstream.applied().size(), "nothing was applied at the upstream");
        }
    }

    @Test
    void theFileBackendCountsAClientGoneMidBodyAsARefusalToo() throws Exception {
        String yaml = TestPolicies.memoryStore()
                .policy("files", "/files/{path...}", "files/{path}").file(dir.resolve("root").toString()).yaml();
        try (ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), yaml, Map.of())) {
            cutShort(proxy.server().port(), "/files/a");
            assertEquals(1.0, proxy.counted("files", Outcome.BAD_REQUEST, 1), "counted as bad_request");
            assertEquals(0.0, proxy.server().metrics().count("files", Outcome.ACCEPTED), "never as accepted");
            assertTrue(!java.nio.file.Files.exists(dir.resolve("root/files/a")), "nothing was written");

            // a token header of only white space is there, and malformed: 400, never 428
            for (String blank : new String[] {" ", "\t", "   "}) {
                Http.Response r = RawHttp.send(proxy.server().port(), "PUT /files/b HTTP/1.1\r\nHost: x\r\n"
                        + "Fencing-Token:" + blank + "\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx");
                assertEquals(400, r.status(), r.body());
                assertTrue(r.body().contains("malformed-token"), r.body());
            }
        }
    }
}
