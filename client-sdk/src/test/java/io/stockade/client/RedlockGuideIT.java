package io.stockade.client;

import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;

import io.stockade.testing.RedisServer;
import io.stockade.testing.TcpRelay;

import org.junit.jupiter.api.Test;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.params.SetParams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * docs/locks-guide.md, section 6 "Redlock, and what it buys", against three real redis-servers (independent masters,
 * no persistence, as Redlock is often run): client 1 takes the lock on A and B (C is cut off from it: a majority);
 * B restarts and forgets; client 2 takes B and C — a majority too. Two holders, nobody at fault but a restart, and
 * their values are random strings: nothing the storage could order.
 */
class RedlockGuideIT {

    private static final SecureRandom RANDOM = new SecureRandom();

    /** What a Redlock client holds: its value and how many nodes it got. */
    private record Held(String value, int nodes, long validityMillis) {
    }

    /** Redlock's acquire: SET NX PX on every node; held with a majority and validity left (TTL - elapsed - drift). */
    private static Optional<Held> redlock(List<Jedis> nodes, String key, long ttlMillis) {
        byte[] random = new byte[16];
        RANDOM.nextBytes(random);
        String value = HexFormat.of().formatHex(random);
        long start = System.nanoTime();
        int got = 0;
        for (Jedis node : nodes) {
            try {
                if ("OK".equals(node.set(key, value, SetParams.setParams().nx().px(ttlMillis)))) {
                    got++;
                }
            } catch (JedisException unreachable) {
                // a node that does not answer in time counts as not locked
            }
        }
        long elapsed = (System.nanoTime() - start) / 1_000_000;
        long validity = ttlMillis - elapsed - (ttlMillis / 100 + 2);
        if (got >= nodes.size() / 2 + 1 && validity > 0) {
            return Optional.of(new Held(value, got, validity));
        }
        return Optional.empty(); // (a real client would now release on every node)
    }

    private static Jedis client(int port) {
        return new Jedis(new HostAndPort("127.0.0.1", port),
                DefaultJedisClientConfig.builder().socketTimeoutMillis(200).connectionTimeoutMillis(200).build());
    }

    @Test
    void aNodeThatRestartsWithoutItsDataGivesTheLockToASecondMajority() throws Exception {
        io.stockade.testing.Tools.require(io.stockade.testing.Tools.Tool.REDIS);
        List<RedisServer> servers = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                servers.add(RedisServer.start(RedisServer.options()));
            }
            RedisServer a = servers.get(0);
            RedisServer b = servers.get(1);
            RedisServer c = servers.get(2);
            try (TcpRelay cutOff = TcpRelay.to(c.port());
                 Jedis c1a = client(a.port()); Jedis c1b = client(b.port()); Jedis c1c = client(cutOff.port())) {
                cutOff.dropToTarget(true); // client 1 cannot reach C
                Held first = redlock(List.of(c1a, c1b, c1c), "reports/2026-12", 30_000).orElseThrow();
                assertEquals(2, first.nodes(), "A and B: a majority");

                b.restart(); // B crashes and comes back without its data (no persistence)

                try (Jedis c2a = client(a.port()); Jedis c2b = client(b.port()); Jedis c2c = client(c.port())) {
                    Held second = redlock(List.of(c2a, c2b, c2c), "reports/2026-12", 30_000).orElseThrow();
                    assertEquals(2, second.nodes(), "B and C: another majority");
                    assertTrue(first.validityMillis() > 20_000 && second.validityMillis() > 20_000,
                            "both hold it, each for tens of seconds more");
                    assertNotEquals(first.value(), second.value());
                    // the values are random: nothing says which holder is the newer one
                    assertTrue(first.value().matches("[0-9a-f]{32}") && second.value().matches("[0-9a-f]{32}"));
                }
            }
        } finally {
            servers.forEach(RedisServer::close);
        }
    }
}
