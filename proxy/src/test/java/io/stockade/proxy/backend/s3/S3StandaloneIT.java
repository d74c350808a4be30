package io.stockade.proxy.backend.s3;

import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.S3Fixture;
import io.stockade.testing.FreePorts;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.S3Exception;
import software.amazon.awssdk.services.s3.model.S3Object;

import static io.stockade.proxy.S3Fixture.token;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * S3 as real tools use it: the S3 example end to end on one machine, as docs/s3.md tells a newcomer to run it. s3proxy
 * is started
 * by {@code scripts/s3proxy.sh} as a child process without a console (where s3proxy's own {@code Main} used to
 * recurse into a StackOverflowError), and the proxy runs {@code policies/examples/s3.yaml} as shipped (only its
 * journal moved to a temporary directory and its port chosen free), with the example's default keys.
 */
class S3StandaloneIT {
    private static final Path SCRIPT = Path.of("..", "scripts", "s3proxy.sh").toAbsolutePath().normalize();
    private static final Path EXAMPLE = Path.of("..", "policies", "examples", "s3.yaml").toAbsolutePath().normalize();
    @TempDir
    static Path dir;
    @TempDir
    static Path journal;
    private static Process s3proxy;
    private static ProxyFixture proxy;
    private static int port;

    @BeforeAll
    static void start() throws Exception {
        port = FreePorts.next();
        ProcessBuilder pb = new ProcessBuilder(SCRIPT.toString(), dir.resolve("store").toString())
                .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()))
                .redirectOutput(dir.resolve("s3proxy.out").toFile())
                .redirectError(dir.resolve("s3proxy.err").toFile());
        pb.environment().put("S3PROXY_PORT", Integer.toString(port));
        pb.environment().put("S3PROXY_CLASSPATH", System.getProperty("java.class.path"));
        pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
        s3proxy = pb.start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!listening(port)) {
            assertTrue(s3proxy.isAlive(), "scripts/s3proxy.sh ended: " + Files.readString(dir.resolve("s3proxy.err")));
            assertTrue(System.nanoTime() < deadline, "s3proxy did not listen within 60 s");
            Thread.sleep(100);
        }
        String shipped = Files.readString(EXAMPLE);
        String yaml = shipped.replace("./stockade-data/s3/journal", journal.toString());
        assertNotEquals(shipped, yaml, "the example's journal line moved: keep this test's data in its dir");
        proxy = ProxyFixture.start(journal, yaml, Map.of("S3_ENDPOINT", "http://127.0.0.1:" + port));
    }

    private static boolean listening(int port) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 200);
            return true;
        } catch (java.io.IOException e) {
            return false;
        }
    }

    @AfterAll
    static void stop() throws Exception {
        if (proxy != null) {
            proxy.close();
        }
        if (s3proxy != null) {
            s3proxy.destroy();
            if (!s3proxy.waitFor(10, TimeUnit.SECONDS)) {
                s3proxy.destroyForcibly();
            }
        }
    }

    @Test
    void theExampleRunsEndToEndAgainstAStandaloneStore() throws Exception {
        S3Client app = S3Fixture.client(proxy.uri(""), "app", "app-secret-change-me");
        S3Client store = S3Fixture.client(URI.create("http://127.0.0.1:" + port), "minioadmin", "minioadmin");
        app.putObject(b -> b.bucket("reports").key("2026/report.csv").overrideConfiguration(token(7)),
                RequestBody.fromString("v7"));
        assertEquals("7", store.headObject(b -> b.bucket("reports").key("2026/report.csv")).metadata()
                .get("fencing-token"));
        assertEquals(412, assertThrows(S3Exception.class, () -> app.putObject(b -> b.bucket("reports")
                .key("2026/report.csv").overrideConfiguration(token(6)), RequestBody.fromString("v6"))).statusCode());
        app.putObject(b -> b.bucket("reports").key("2026/other.csv").overrideConfiguration(token(7)),
                RequestBody.fromString("other"));
        app.deleteObject(b -> b.bucket("reports").key("2026/report.csv").overrideConfiguration(token(8)));
        assertEquals(List.of("2026/other.csv"), app.listObjectsV2(b -> b.bucket("reports")).contents().stream()
                .map(S3Object::key).toList());
        assertEquals("true", store.headObject(b -> b.bucket("reports").key("2026/report.csv")).metadata()
                .get("fencing-deleted"));
        // the data is in the directory, the log in its file, and nothing recursed
        assertTrue(Files.exists(dir.resolve("store/data/reports/2026/other.csv")));
        assertTrue(s3proxy.isAlive());
        String log = Files.readString(dir.resolve("store/s3proxy.log"));
        assertTrue(log.contains("Started"), log);
        assertFalse(log.contains("StackOverflowError") || Files.readString(dir.resolve("s3proxy.err"))
                .contains("StackOverflowError"));
    }
}
