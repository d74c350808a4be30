package io.stockade.proxy.verify.dynamodb;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

import io.stockade.policy.TokenVerification;
import io.stockade.proxy.verify.TokenVerifier;

import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;
import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.exception.ApiCallTimeoutException;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.http.apache5.Apache5HttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.DynamoDbClientBuilder;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
import software.amazon.awssdk.services.dynamodb.model.DynamoDbException;
import software.amazon.awssdk.services.dynamodb.model.ResourceNotFoundException;

/**
 * A token is genuine when it is the {@code token} of the DynamoDB lock item {@code prefix + scope} and that item is
 * held. The item is Stockade's DynamoDB lock recipe (the client SDK's {@code Leases.dynamodb}; laid out in
 * docs/locks-guide.md): partition key {@code key}; {@code token}, raised with {@code ADD} in the conditional write
 * that takes the lock, so every later holder's is higher; {@code rvn}, a record version number written afresh by
 * every acquisition and renewal; {@code leaseDuration} in milliseconds; {@code released}, set by a release (the item,
 * and its counter, is never deleted).
 * <p>
 * One strongly consistent {@code GetItem} per lookup (a read of the leader's copy: an eventually consistent read
 * could vouch for a holder that already lost the lock). No item, a released item or another token is a refusal.
 * <p>
 * Expiry without comparing clocks: the verifier remembers, per key, the {@code rvn} it last read and when it first
 * read it on its own monotonic clock. A lock whose {@code rvn} it has read unchanged for the item's whole
 * {@code leaseDuration} is refused as expired: the holder wrote that {@code rvn} before the first read and has not
 * renewed since, so its lease has run out by its own clock too; it is the rule a contender follows before it takes
 * the lock over. The memory is bounded ({@link #MAX_SIGHTINGS} keys; when full it starts again, which only delays
 * that refusal by up to one lease duration: the token comparison, the fence itself, does not depend on it).
 * <p>
 * A missing table, a refusal of the proxy's credentials, throttling, a 5xx, an item that is not a lock item or no
 * answer within {@code timeout} (all of the SDK's attempts) is {@link Unavailable}.
 */
public final class DynamoDbLockVerifier implements TokenVerifier {
    // The lock item's attribute names, written by the client SDK and read by the proxy's verifier: the two modules
    // share no code, so client-sdk's VerifierWireFormatIT checks that the two sides agree. Public for the proxy's
    // tests, which write lock items by these names.
    public static final String KEY = "key";
    public static final String TOKEN = "token";
    public static final String RVN = "rvn";
    public static final String LEASE_DURATION = "leaseDuration";
    public static final String RELEASED = "released";
    /** DynamoDB's bound on a partition key value, in UTF-8 bytes. */
    static final int MAX_KEY_BYTES = 2048;
    static final int MAX_SIGHTINGS = 100_000;
    private static final Map<String, String> NAMES = Map.of("#t", TOKEN, "#r", RVN, "#l", LEASE_DURATION,
            "#x", RELEASED);

    /** The {@code rvn} read for a key, and when it was first read (monotonic nanoseconds). */
    private record Sighting(String rvn, long firstSeen) {
    }

    private final DynamoDbClient db;
    private final String table;
    private final String prefix;
    private final Duration timeout;
    private final LongSupplier nanoTime;
    private final ConcurrentHashMap<String, Sighting> sightings = new ConcurrentHashMap<>();
    private volatile boolean closed;

    DynamoDbLockVerifier(DynamoDbClient db, TokenVerification.DynamoDb config, LongSupplier nanoTime) {
        this.db = db;
        this.table = config.table();
        this.prefix = config.prefix();
        this.timeout = config.timeout();
        this.nanoTime = nanoTime;
    }

    /**
     * Builds the client. Does not call DynamoDB (nor resolve credentials): while it is unreachable every verdict is
     * {@link Unavailable}, and the proxy starts.
     *
     * @param what who the verifier is for, to start every message with
     */
    public static DynamoDbLockVerifier open(TokenVerification.DynamoDb config, String what) {
        AwsCredentialsProvider credentials = config.accessKey() != null
                ? StaticCredentialsProvider.create(AwsBasicCredentials.create(config.accessKey(), config.secretKey()))
                : DefaultCredentialsProvider.builder().build();
        DynamoDbClientBuilder b = DynamoDbClient.builder()
                .region(Region.of(config.region()))
                .credentialsProvider(credentials)
                .httpClient(Apache5HttpClient.builder().connectionTimeout(config.timeout())
                        .socketTimeout(config.timeout()).maxConnections(64).build())
                .overrideConfiguration(c -> c.apiCallTimeout(config.timeout()));
        if (config.endpoint() != null) {
            b.endpointOverride(config.endpoint());
        }
        try {
            return new DynamoDbLockVerifier(b.build(), config, System::nanoTime);
        } catch (SdkException e) {
            throw new IllegalArgumentException(what + ": cannot build the DynamoDB client: " + e.getMessage(), e);
        }
    }

    @Override
    public Verdict verify(Claim claim) {
        if (closed) {
            return new Unavailable("DynamoDB: verifier closed");
        }
        String key = prefix + claim.scope();
        String where = "the DynamoDB lock '" + key + "' (table " + table + ")";
        if (key.isEmpty() || key.getBytes(StandardCharsets.UTF_8).length > MAX_KEY_BYTES) {
            return new Refused("'" + (key.length() > 64 ? key.substring(0, 64) + "…" : key) + "' cannot be a DynamoDB"
                    + " partition key (1 to 2048 bytes), so no DynamoDB lock holds this scope");
        }
        Map<String, AttributeValue> item;
        long sent = nanoTime.getAsLong();
        try {
            item = db.getItem(r -> r.tableName(table).key(Map.of(KEY, AttributeValue.fromS(key)))
                    .consistentRead(true).projectionExpression("#t, #r, #l, #x").expressionAttributeNames(NAMES))
                    .item();
        } catch (ApiCallTimeoutException e) {
            return new Unavailable("DynamoDB: no answer within " + timeout.toMillis() + "ms");
        } catch (ResourceNotFoundException e) {
            return new Unavailable("DynamoDB: no table '" + table + "' (create it as docs/locks-guide.md shows)");
        } catch (DynamoDbException e) {
            // AccessDenied, throttling, 5xx, ...: DynamoDB could not answer the question
            String code = e.awsErrorDetails() == null ? null : e.awsErrorDetails().errorCode();
            return new Unavailable("DynamoDB: HTTP " + e.statusCode() + (code == null ? "" : " " + code) + " for "
                    + where);
        } catch (SdkException e) {
            return new Unavailable("DynamoDB: " + e.getMessage());
        } catch (RuntimeException e) {
            return new Unavailable("DynamoDB: " + e);
        }
        if (item == null || item.isEmpty()) {
            sightings.remove(key);
            return new Refused("nobody holds " + where + " (no such item)");
        }
        try {
            return judge(item, key, claim.token(), where, sent);
        } catch (IllegalArgumentException e) {
            return new Unavailable("DynamoDB: " + where + " is not a lock item as expected: " + e.getMessage());
        }
    }

    private Verdict judge(Map<String, AttributeValue> item, String key, long token, String where, long sent) {
        long itemToken = number(item, TOKEN);
        long leaseMillis = number(item, LEASE_DURATION);
        AttributeValue rvnValue = item.get(RVN);
        if (rvnValue == null || rvnValue.s() == null || rvnValue.s().isEmpty()) {
            throw new IllegalArgumentException("no rvn (a string)");
        }
        String rvn = rvnValue.s();
        AttributeValue released = item.get(RELEASED);
        if (released != null && Boolean.TRUE.equals(released.bool())) {
            return new Refused("nobody holds " + where + " (released)");
        }
        if (itemToken != token) {
            // the holder's token stays out of the client's answer: a forger would send it back
            return new Refused("not the token of the holder of " + where, "the item has token " + itemToken);
        }
        long now = nanoTime.getAsLong();
        if (sightings.size() >= MAX_SIGHTINGS && !sightings.containsKey(key)) {
            sightings.clear();
        }
        Sighting seen = sightings.compute(key, (k, old) -> old != null && old.rvn().equals(rvn) ? old
                : new Sighting(rvn, now));
        long unchanged = now - seen.firstSeen();
        if (leaseMillis >= 0 && leaseMillis <= Long.MAX_VALUE / 1_000_000L && unchanged >= leaseMillis * 1_000_000L) {
            return new Refused("the lease on " + where + " has expired: the holder has not renewed it for its lease"
                    + " duration of " + leaseMillis + "ms", "rvn " + rvn + " unchanged for " + unchanged / 1_000_000L
                    + "ms");
        }
        // the item says when the lease of another client's sighting ends, not when the holder last renewed:
        // no time left is known, remembered for the cache's bound
        return Genuine.noTimeLeftKnown(sent);
    }

    private static long number(Map<String, AttributeValue> item, String name) {
        AttributeValue v = item.get(name);
        if (v == null || v.n() == null) {
            throw new IllegalArgumentException("no " + name + " (a number)");
        }
        try {
            return Long.parseLong(v.n());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " " + v.n() + " is not a whole number in 64 bits");
        }
    }

    @Override
    public String kind() {
        return "dynamodb";
    }

    @Override
    public void close() {
        closed = true;
        db.close();
    }
}
