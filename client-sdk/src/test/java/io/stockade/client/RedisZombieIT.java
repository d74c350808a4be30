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

import io.stockade.testing.RedisServer;

import org.junit.jupiter.api.Test;
import redis.clients.jedis.Jedis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The zombie test with the Redis provider and a real proxy (a child JVM) whose policy verifies tokens against the same
 * Redis ({@code fence.verify: {kind: redis}}): a holder JVM is SIGSTOPped past its 2 s TTL until its lock key has
 * expired in Redis. Continued, it learns of the loss before writing; the write it forces anyway is refused with 403
 * (its lock is gone: nobody holds it), and after a new holder took the lock and wrote, with 409. The proxy runs with
 * the default verdict cache (ttl 10s): the zombie's verdict, remembered at its first write, ends with the lock's
 * {@code PTTL} read at that lookup, so the forced write after the key expired is looked up again and refused.
 */
class RedisZombieIT {

    @Test
    void aStoppedHolderIsRefused403OnceItsLockIsGoneAnd409AfterTheNewHolderWrote() throws Exception {
        io.stockade.testing.Tools.require(io.stockade.testing.Tools.Tool.REDIS);
        Path dir = Files.createTempDirectory("stockade-redis-zombie-");
        String name = "zombie-" + UUID.randomUUID();
        String lock = "files/" + name; // the lease is named like the proxy's scope (no prefix)
        try (RedisServer redis = RedisServer.start(RedisServer.options());
             Jedis admin = new Jedis(redis.url());
             Children.Proxy proxy = new Children.Proxy(dir, "{kind: redis, url: \"" + redis.url() + "\"}")) {
            Process zombie = Children.java(ZombieWriter.class.getName(), redis.url(), name, proxy.base, "files/")
                    .redirectError(dir.resolve("zombie.err").toFile()).start();
            try {
                BlockingQueue<String> out = Children.lines(zombie);
                long zombieToken = Long.parseLong(Children.await(out, "TOKEN", Duration.ofSeconds(30)));
                assertEquals("201", Children.await(out, "WROTE", Duration.ofSeconds(30)));
                assertTrue(admin.get(lock).matches(zombieToken + ":[0-9a-f]{32}:zombie"), admin.get(lock));

                Children.signal(zombie.pid(), "STOP");
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (admin.exists(lock)) { // the lock expires in Redis while its holder is stopped
                    assertTrue(System.nanoTime() < deadline, "the stopped holder's lock did not expire");
                    Thread.sleep(20);
                }
                Children.signal(zombie.pid(), "CONT");
                OutputStream in = zombie.getOutputStream();
                in.write("GO\n".getBytes(StandardCharsets.UTF_8));
                in.flush();
                assertTrue(Children.await(out, "CHECKPOINT", Duration.ofSeconds(20)).startsWith("threw"));
                assertTrue(Children.await(out, "FENCED-CLIENT", Duration.ofSeconds(20)).startsWith("refused"));
                assertEquals("403", Children.await(out, "FORCED", Duration.ofSeconds(20)),
                        "its lock is gone: the token is nobody's");

                HttpClient plain = HttpClient.newHttpClient();
                URI file = URI.create(proxy.base + "/files/" + name);
                try (LeaseProvider leases = Leases.newBuilder().holderIdentity("successor").redis(redis.url());
                     Lease lease = leases.acquire(lock, Duration.ofSeconds(10), Duration.ofSeconds(5))) {
                    assertTrue(lease.token() > zombieToken);
                    HttpResponse<String> w = FencedHttpClient.of(plain, lease, Duration.ofSeconds(1)).send(
                            HttpRequest.newBuilder(file).PUT(HttpRequest.BodyPublishers.ofString("successor")).build(),
                            HttpResponse.BodyHandlers.ofString());
                    assertEquals(204, w.statusCode(), w.body());

                    in.write("AGAIN\n".getBytes(StandardCharsets.UTF_8));
                    in.close();
                    assertEquals("409", Children.await(out, "FORCED-AGAIN", Duration.ofSeconds(20)),
                            "stale once the new holder wrote");
                    assertTrue(zombie.waitFor(20, TimeUnit.SECONDS));
                    assertEquals("successor", plain.send(HttpRequest.newBuilder(file).build(),
                            HttpResponse.BodyHandlers.ofString()).body());
                }
            } finally {
                zombie.destroyForcibly();
            }
        }
    }
}
