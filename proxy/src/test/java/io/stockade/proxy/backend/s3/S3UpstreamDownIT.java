package io.stockade.proxy.backend.s3;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.logging.LogRecord;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.S3Fixture;
import io.stockade.proxy.testing.Warnings;
import io.stockade.testing.FreePorts;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.S3Exception;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An S3 endpoint that is down, met by a request the pipeline does not answer (an unfenced read): the client gets
 * S3's 503 ServiceUnavailable naming the upstream (not a bare 500), and the operator one WARN line saying the same.
 */
class S3UpstreamDownIT {
    @TempDir
    Path dir;

    @Test
    void anUnfencedReadOfADownEndpointIsA503NamingIt() throws Exception {
        int dead = FreePorts.next();
        try (ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), S3Fixture.POLICY,
                Map.of("S3PORT", Integer.toString(dead)));
             S3Client s3 = S3Fixture.client(proxy.uri(""), S3Fixture.APP_KEY, S3Fixture.APP_SECRET)) {
            List<LogRecord> warned = Warnings.during("io.stockade", () -> {
                S3Exception e = assertThrows(S3Exception.class, () -> s3.getObject(b -> b.bucket("b").key("k")));
                assertEquals(503, e.statusCode(), e.toString());
                assertEquals("ServiceUnavailable", e.awsErrorDetails().errorCode());
                assertTrue(e.awsErrorDetails().errorMessage().contains("upstream 127.0.0.1:" + dead
                        + ": refused the connection; nothing was sent"), e.awsErrorDetails().errorMessage());
            });
            // one line per request at most (the SDK retries a 503 after a back-off), each naming the upstream
            List<LogRecord> lines = warned.stream().filter(r -> r.getMessage().contains("GET /b/k")).toList();
            assertTrue(!lines.isEmpty() && lines.size() <= 4, warned.stream().map(LogRecord::getMessage).toList()
                    .toString());
            for (LogRecord line : lines) {
                assertTrue(line.getMessage().contains("upstream 127.0.0.1:" + dead + ": refused the connection"),
                        line.getMessage());
                assertNull(line.getThrown(), "no stack trace at WARNING");
            }
        }
    }
}
