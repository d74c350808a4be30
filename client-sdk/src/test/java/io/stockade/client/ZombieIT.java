package io.stockade.client;

import java.io.OutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The zombie test: a JVM holding a lease is SIGSTOPped past its TTL while another process takes the lease and writes
 * through a real Stockade proxy. After SIGCONT the first learns of the loss before writing, and the write it forces
 * anyway is rejected by the proxy.
 */
class ZombieIT {

    @Test
    void aStoppedHolderLearnsTheLossBeforeWritingAndItsForcedWriteIsRejectedWith409() throws Exception {
        Path dir = Files.createTempDirectory("stockade-zombie-");
        String name = "zombie-" + UUID.randomUUID();
        try (Children.Proxy proxy = new Children.Proxy(dir)) {
            Process zombie = Children.java(ZombieWriter.class.getName(), PostgresLeaseIT.URL, name, proxy.base)
                    .redirectError(dir.resolve("zombie.err").toFile()).start();
            try {
                BlockingQueue<String> out = Children.lines(zombie);
                long zombieToken = Long.parseLong(Children.await(out, "TOKEN", Duration.ofSeconds(30)));
                assertEquals("201", Children.await(out, "WROTE", Duration.ofSeconds(30)));

                Children.signal(zombie.pid(), "STOP");
                Thread.sleep(3000); // past the 2 s TTL on the database's clock

                HttpClient plain = HttpClient.newHttpClient();
                URI file = URI.create(proxy.base + "/files/" + name);
                try (LeaseProvider leases = Leases.newBuilder().holderIdentity("successor")
                        .postgres(PostgresLeaseIT.URL);
                     Lease lease = leases.acquire(name, Duration.ofSeconds(10), Duration.ofSeconds(5))) {
                    assertTrue(lease.token() > zombieToken);
                    HttpResponse<String> w = FencedHttpClient.of(plain, lease, Duration.ofSeconds(1)).send(
                            HttpRequest.newBuilder(file).PUT(HttpRequest.BodyPublishers.ofString("successor")).build(),
                            HttpResponse.BodyHandlers.ofString());
                    assertTrue(w.statusCode() / 100 == 2, "successor's write: " + w.statusCode() + " " + w.body());

                    Children.signal(zombie.pid(), "CONT");
                    OutputStream in = zombie.getOutputStream();
                    in.write("GO\n".getBytes(StandardCharsets.UTF_8));
                    in.close(); // no "AGAIN": the zombie ends after its forced write

                    String checkpoint = Children.await(out, "CHECKPOINT", Duration.ofSeconds(20));
                    assertTrue(checkpoint.startsWith("threw"), "checkpoint after SIGCONT: " + checkpoint);
                    assertTrue(Children.await(out, "FENCED-CLIENT", Duration.ofSeconds(20)).startsWith("refused"));
                    assertEquals("409", Children.await(out, "FORCED", Duration.ofSeconds(20)),
                            "the proxy rejects the stale token");
                    assertTrue(zombie.waitFor(20, TimeUnit.SECONDS));

                    String stored = plain.send(HttpRequest.newBuilder(file).build(),
                            HttpResponse.BodyHandlers.ofString()).body();
                    assertEquals("successor", stored);
                }
            } finally {
                zombie.destroyForcibly();
            }
        }
    }
}
