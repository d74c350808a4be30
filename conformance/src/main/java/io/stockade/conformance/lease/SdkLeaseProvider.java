package io.stockade.conformance.lease;

import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;

import io.stockade.client.Leases;

import org.jspecify.annotations.Nullable;
import software.amazon.awssdk.http.apache5.Apache5HttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;

/**
 * Leases from a real lock service through the client SDK's providers ({@code io.stockade.client}): etcd (token =
 * the lock key's create revision), PostgreSQL (token = the {@code stockade_leases} row's counter) or Redis (token =
 * the lock's counter, never below the server's clock in milliseconds) or ZooKeeper (token = the lock node's czxid,
 * the lock at {@code /<lock name>}), DynamoDB (token = the lock item's counter) or Consul (token = the KV key's
 * {@code ModifyIndex} after the acquire), with real TTLs
 * kept alive by the SDK's watchdog, which renews by compare-and-set on the token and ends the lease the moment it
 * is lost (a refused renewal, a vanished key, or a watchdog that ran late because the process was paused).
 *
 * <p>Spec (what the writer processes get): {@code etcd:<ttlMillis>:<lock name>:<endpoint>[,<endpoint>...]},
 * {@code postgres:<ttlMillis>:<lock name>:<jdbc url>}, {@code redis:<ttlMillis>:<lock name>:<redis url>} or
 * {@code zookeeper:<ttlMillis>:<lock name>:<host:port>[,<host:port>...]} or
 * {@code dynamodb:<ttlMillis>:<lock name>:<table>,<region>[,<endpoint URL>]} (the lock item's key is the lock name;
 * credentials from the AWS SDK's default chain) or {@code consul:<ttlMillis>:<lock name>:<http(s)://host:port>} (the
 * KV key is the lock name; the ACL token from {@code CONSUL_HTTP_TOKEN}; ttl at least 10 s). The
 * writer's {@link Lease#renew()} asks the SDK whether the lease is still valid: renewing is the watchdog's job, not
 * the writer's.
 */
public final class SdkLeaseProvider implements LeaseProvider {

    /** How long one {@link #tryAcquire} waits in the lock service's queue before it reports "held". */
    private static final Duration WAIT = Duration.ofMillis(300);

    // inline name: the SDK's LeaseProvider and Lease beside the suite's own of the same names
    private final Function<Leases.Builder, io.stockade.client.LeaseProvider> backend; // inline name: as above
    private final String lockName;
    private final Duration ttl;
    private final String describe;
    private io.stockade.client.@Nullable LeaseProvider sdk; // inline name: as above

    private SdkLeaseProvider(Function<Leases.Builder, io.stockade.client.LeaseProvider> backend, // inline name: ditto
                             String lockName, Duration ttl, String describe) {
        this.backend = backend;
        this.lockName = lockName;
        this.ttl = ttl;
        this.describe = describe;
    }

    /** From a spec without its {@code etcd:}/{@code postgres:}/{@code redis:} prefix; {@code kind} is that prefix. */
    static SdkLeaseProvider create(String kind, String rest) {
        String[] p = rest.split(":", 3);
        if (p.length != 3 || p[1].isEmpty()) {
            throw new IllegalArgumentException(kind + " lease spec is " + kind + ":<ttlMillis>:<lock name>:<where>");
        }
        Duration ttl = Duration.ofMillis(Long.parseLong(p[0]));
        String where = p[2];
        return switch (kind) {
            case "etcd" -> new SdkLeaseProvider(b -> b.etcd(where.split(",")), p[1], ttl, "etcd " + where);
            case "postgres" -> new SdkLeaseProvider(b -> b.postgres(where), p[1], ttl, "postgres");
            case "redis" -> new SdkLeaseProvider(b -> b.redis(where), p[1], ttl, "redis " + withoutPassword(where));
            case "zookeeper" -> new SdkLeaseProvider(b -> b.zookeeper(where), p[1], ttl, "zookeeper " + where);
            case "consul" -> {
                if (!where.matches("(?i)https?://[^/?#@]+/?")) {
                    throw new IllegalArgumentException("consul lease spec is consul:<ttlMillis>:<lock name>:"
                            + "http(s)://host:port");
                }
                String acl = System.getenv("CONSUL_HTTP_TOKEN"); // as the consul command reads it
                yield new SdkLeaseProvider(b -> b.consul(URI.create(where), "",
                        acl == null || acl.isBlank() ? null : acl.strip()), p[1], ttl, "consul " + where);
            }
            case "dynamodb" -> {
                String[] w = where.split(",", -1);
                if (w.length < 2 || w.length > 3 || w[0].isEmpty() || w[1].isEmpty()) {
                    throw new IllegalArgumentException("dynamodb lease spec is dynamodb:<ttlMillis>:<lock name>:"
                            + "<table>,<region>[,<endpoint URL>]");
                }
                yield new SdkLeaseProvider(b -> b.dynamodb(dynamoDb(w[1], w.length == 3 ? w[2] : null), w[0], ""),
                        p[1], ttl, "dynamodb " + w[0] + (w.length == 3 ? " at " + w[2] : " in " + w[1]));
            }
            default -> throw new IllegalArgumentException("unknown SDK lease provider '" + kind + "'");
        };
    }

    /**
     * A DynamoDB client in {@code region} (at {@code endpoint} when given), the credentials from the AWS SDK's
     * default chain: the environment the suite was started in (never the command line), a profile, a role.
     */
    private static DynamoDbClient dynamoDb(String region, @Nullable String endpoint) {
        var b = DynamoDbClient.builder()
                .region(Region.of(region))
                .httpClient(Apache5HttpClient.builder().build());
        if (endpoint != null) {
            b.endpointOverride(URI.create(endpoint));
        }
        return b.build();
    }

    /** A Redis URL for messages: its password left out. */
    static String withoutPassword(String url) {
        return url.replaceFirst("(?<=://)[^@/]*@", "…@");
    }

    @Override
    public synchronized Optional<Lease> tryAcquire(String holder) throws IOException {
        try {
            if (sdk == null) {   // one SDK provider per writer process, named after the writer
                sdk = backend.apply(Leases.newBuilder().holderIdentity(holder + "-" + ProcessHandle.current().pid()));
            }
            return Optional.of(new SdkLease(sdk.acquire(lockName, ttl, WAIT)));
        } catch (TimeoutException held) {
            return Optional.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        } catch (IllegalStateException e) {
            throw new IOException(describe + ": " + e.getMessage(), e);
        }
    }

    @Override
    public synchronized void close() {
        if (sdk != null) {
            sdk.close();
        }
    }

    private record SdkLease(io.stockade.client.Lease lease) implements Lease { // inline name: the SDK's Lease
        @Override
        public long token() {
            return lease.token();
        }

        @Override
        public long deadlineNanos() {
            long now = System.nanoTime();
            return lease.isValid() ? now + lease.remaining().toNanos() : now - 1;
        }

        @Override
        public boolean renew() {
            return lease.isValid();
        }

        @Override
        public void close() {
            lease.close();
        }
    }
}
