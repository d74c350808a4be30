package io.stockade.client;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.jspecify.annotations.Nullable;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
import software.amazon.awssdk.services.dynamodb.model.ConditionalCheckFailedException;
import software.amazon.awssdk.services.dynamodb.model.ResourceNotFoundException;
import software.amazon.awssdk.services.dynamodb.model.ReturnValue;
import software.amazon.awssdk.services.dynamodb.model.UpdateItemRequest;

/**
 * A lock item in a DynamoDB table, taken and kept by conditional writes (the AWS SDK v2 client the caller built).
 *
 * <p>The item (partition key {@code key} = prefix + name, a string): {@code owner} (the holder identity),
 * {@code token} (the fencing token: a number raised by one with {@code ADD} in every acquiring write), {@code rvn}
 * (a record version number, a random UUID written afresh by every acquisition, renewal and release),
 * {@code leaseDuration} (the holder's ttl in milliseconds), {@code released} (a boolean). The item is never deleted:
 * a deletion would start the counter again at 1.
 *
 * <ul>
 *   <li>Acquire: a strongly consistent {@code GetItem}; an absent item is taken with the condition
 *       {@code attribute_not_exists(key)}, a released one with {@code rvn = <the rvn read>}; a held one only once this
 *       process has read the same {@code rvn} for a whole {@code leaseDuration} on its own monotonic clock, across
 *       acquire calls (the
 *       record-version trick of the AWS lock client: the holder did not renew for its lease, and no clock is compared
 *       across machines), with {@code rvn = <that rvn>}. The taking write is one {@code UpdateItem}
 *       {@code SET owner, rvn, leaseDuration, released = false ADD token 1} answered {@code ALL_NEW}: the token
 *       comes back with it. A write whose answer was lost is recognised at the next read by its own {@code rvn}.</li>
 *   <li>Renewal: {@code SET rvn = <new>, leaseDuration} on the condition {@code rvn = <ours> AND token = <ours>}; a
 *       failed condition is {@link Renewal#REFUSED} (taken over) or {@link Renewal#REVOKED} (released or gone).</li>
 *   <li>Release: {@code SET released = true, rvn = <new> REMOVE owner} on the condition {@code rvn = <ours>}.</li>
 * </ul>
 * Validity is counted from just before the acquiring or renewing write was sent; a contender waits the lease
 * duration from <em>after</em> it read that write's {@code rvn}, so it cannot take over while this holder believes it
 * holds.
 */
final class DynamoDbLeaseService implements LeaseService {
    // The lock item's attribute names, written by the client SDK and read by the proxy's verifier: the two modules
    // share no code, so client-sdk's VerifierWireFormatIT checks that the two sides agree.
    static final String KEY = "key";
    static final String OWNER = "owner";
    static final String TOKEN = "token";
    static final String RVN = "rvn";
    static final String LEASE_DURATION = "leaseDuration";
    static final String RELEASED = "released";
    static final int MAX_KEY_BYTES = 2048;

    /** A held item: its key, and the rvn this holder wrote last (each renewal replaces it). */
    static final class Handle {
        final String key;
        volatile String rvn;

        Handle(String key, String rvn) {
            this.key = key;
            this.rvn = rvn;
        }
    }

    /** Another holder's rvn as this process first read it, and when (ticker nanoseconds). */
    private record Sighting(String rvn, long firstSeen) {
    }

    /** Bound on {@link #sightings}: past it they start again (a takeover then waits one lease duration more). */
    static final int MAX_SIGHTINGS = 10_000;

    private final DynamoDbClient db;
    private final String table;
    private final String prefix;
    private final Ticker ticker;
    /**
     * Per key, the rvn of another holder this process is waiting out, kept across {@link #acquire} calls: a caller
     * that tries with short timeouts again and again (a loop of {@code acquire(name, ttl, 300ms)}) still takes an
     * abandoned lock over once it has read the same rvn for the lease duration in total.
     */
    private final ConcurrentHashMap<String, Sighting> sightings =
            new ConcurrentHashMap<>();

    DynamoDbLeaseService(DynamoDbClient db, String table, String prefix, Ticker ticker) {
        if (table == null || !table.matches("[A-Za-z0-9_.-]{3,255}")) {
            throw new IllegalArgumentException("'" + table + "' is not a DynamoDB table name (3 to 255 of A-Z a-z"
                    + " 0-9 _ . -)");
        }
        this.db = db;
        this.table = table;
        this.prefix = prefix;
        this.ticker = ticker;
    }

    private static Map<String, AttributeValue> key(String key) {
        return Map.of(KEY, AttributeValue.fromS(key));
    }

    /** The item read with a strongly consistent read, empty when there is none. */
    private Map<String, AttributeValue> read(String key, Duration timeout) {
        return db.getItem(r -> r.tableName(table).key(key(key)).consistentRead(true)
                .overrideConfiguration(c -> c.apiCallTimeout(atLeastOneMilli(timeout)))).item();
    }

    @Override
    public Grant acquire(String name, String holder, Duration ttl, Duration timeout) throws Exception {
        String key = prefix + name;
        int bytes = key.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > MAX_KEY_BYTES) {
            throw new IllegalArgumentException("'" + key.substring(0, 64) + "…' is " + bytes + " bytes: a DynamoDB"
                    + " partition key is at most " + MAX_KEY_BYTES);
        }
        long deadline = ticker.read() + timeout.toNanos();
        long poll = LeaseService.pollNanos(ttl);
        String pending = null; // the rvn of a taking write whose answer was lost
        long pendingSent = 0;
        String why;
        while (true) {
            Map<String, AttributeValue> item;
            try {
                item = read(key, Duration.ofSeconds(10));
            } catch (ResourceNotFoundException e) {
                throw new IllegalStateException("no DynamoDB table '" + table + "' (make it with"
                        + " DynamoDbLockTable.create or aws dynamodb create-table: partition key 'key', a string)", e);
            }
            String rvn = item.isEmpty() ? null : string(item, RVN);
            boolean released = !item.isEmpty() && item.get(RELEASED) != null
                    && Boolean.TRUE.equals(item.get(RELEASED).bool());
            if (pending != null && pending.equals(rvn) && !released && holder.equals(string(item, OWNER))) {
                return new Grant(number(item, TOKEN), pendingSent, new Handle(key, pending)); // it did land
            }
            boolean free;
            if (item.isEmpty() || released) {
                sightings.remove(key);
                free = true;
                why = null;
            } else {
                long now = ticker.read();
                if (sightings.size() >= MAX_SIGHTINGS && !sightings.containsKey(key)) {
                    sightings.clear();
                }
                String current = Objects.requireNonNull(rvn); // the item is there: it has an rvn
                Sighting seen = sightings.compute(key, (k, old) -> old != null && old.rvn().equals(current) ? old
                        : new Sighting(current, now));
                long lease = TimeUnit.MILLISECONDS.toNanos(number(item, LEASE_DURATION));
                free = now - seen.firstSeen() >= lease;
                why = "held by '" + string(item, OWNER) + "' (lease " + number(item, LEASE_DURATION) + "ms, not seen"
                        + " renewed for " + TimeUnit.NANOSECONDS.toMillis(now - seen.firstSeen()) + "ms)";
            }
            if (free) {
                String mine = UUID.randomUUID().toString();
                long sent = ticker.read();
                try {
                    Map<String, AttributeValue> now = db.updateItem(take(key, holder, ttl, mine, rvn)).attributes();
                    sightings.remove(key);
                    return new Grant(number(now, TOKEN), sent, new Handle(key, mine));
                } catch (ConditionalCheckFailedException e) {
                    why = "taken by another contender first";
                } catch (SdkException e) {
                    pending = mine; // landed or not: the next read says
                    pendingSent = sent;
                    why = "the taking write failed: " + e.getMessage();
                }
            }
            long left = deadline - ticker.read();
            if (left <= 0) {
                if (pending != null) {
                    giveBack(key, pending);
                }
                throw new TimeoutException("DynamoDB lock '" + key + "' (table " + table + ") not acquired within "
                        + timeout + ": " + why);
            }
            TimeUnit.NANOSECONDS.sleep(Math.min(left, poll));
        }
    }

    /** The taking write: absent ({@code seen} null) or still at the rvn read. */
    private UpdateItemRequest take(String key, String holder, Duration ttl, String mine, @Nullable String seen) {
        Map<String, String> names = new HashMap<>(Map.of("#o", OWNER, "#r", RVN, "#l", LEASE_DURATION,
                "#x", RELEASED, "#t", TOKEN));
        Map<String, AttributeValue> values = new HashMap<>(Map.of(":o", AttributeValue.fromS(holder),
                ":r", AttributeValue.fromS(mine), ":l", AttributeValue.fromN(Long.toString(ttl.toMillis())),
                ":no", AttributeValue.fromBool(false), ":one", AttributeValue.fromN("1")));
        String condition;
        if (seen == null) {
            condition = "attribute_not_exists(#k)";
            names.put("#k", KEY);
        } else {
            condition = "#r = :seen";
            values.put(":seen", AttributeValue.fromS(seen));
        }
        return UpdateItemRequest.builder().tableName(table).key(key(key))
                .updateExpression("SET #o = :o, #r = :r, #l = :l, #x = :no ADD #t :one")
                .conditionExpression(condition).expressionAttributeNames(names).expressionAttributeValues(values)
                .returnValues(ReturnValue.ALL_NEW).build();
    }

    @Override
    public Renewal renew(String name, String holder, Grant grant, Duration ttl, Duration timeout) throws Exception {
        Handle h = (Handle) grant.handle();
        long deadline = ticker.read() + timeout.toNanos();
        String next = UUID.randomUUID().toString();
        try {
            db.updateItem(b -> b.tableName(table).key(key(h.key))
                    .updateExpression("SET #r = :next, #l = :l")
                    .conditionExpression("#r = :mine AND #t = :t")
                    .expressionAttributeNames(Map.of("#r", RVN, "#l", LEASE_DURATION, "#t", TOKEN))
                    .expressionAttributeValues(Map.of(":next", AttributeValue.fromS(next),
                            ":l", AttributeValue.fromN(Long.toString(ttl.toMillis())),
                            ":mine", AttributeValue.fromS(h.rvn),
                            ":t", AttributeValue.fromN(Long.toString(grant.token()))))
                    .overrideConfiguration(c -> c.apiCallTimeout(atLeastOneMilli(timeout))));
            h.rvn = next;
            return Renewal.RENEWED;
        } catch (ConditionalCheckFailedException e) {
            Map<String, AttributeValue> item = read(h.key, Duration.ofNanos(deadline - ticker.read()));
            if (item.isEmpty() || (item.get(RELEASED) != null && Boolean.TRUE.equals(item.get(RELEASED).bool()))) {
                return Renewal.REVOKED;
            }
            return Renewal.REFUSED; // another holder's token, or our rvn replaced
        }
    }

    @Override
    public void release(String name, String holder, Grant grant) {
        Handle h = (Handle) grant.handle();
        giveBack(h.key, h.rvn);
    }

    /** Marks the item released if it still carries {@code rvn}; a later holder's item is left alone. */
    private void giveBack(String key, String rvn) {
        try {
            db.updateItem(b -> b.tableName(table).key(key(key))
                    .updateExpression("SET #x = :yes, #r = :next REMOVE #o")
                    .conditionExpression("#r = :mine")
                    .expressionAttributeNames(Map.of("#x", RELEASED, "#r", RVN, "#o", OWNER))
                    .expressionAttributeValues(Map.of(":yes", AttributeValue.fromBool(true),
                            ":next", AttributeValue.fromS(UUID.randomUUID().toString()),
                            ":mine", AttributeValue.fromS(rvn)))
                    .overrideConfiguration(c -> c.apiCallTimeout(Duration.ofSeconds(5))));
        } catch (SdkException e) {
            // not ours any more, or DynamoDB unreachable: the lease then ends with its duration
        }
    }

    private static String string(Map<String, AttributeValue> item, String name) {
        AttributeValue v = item.get(name);
        if (v == null || v.s() == null) {
            throw new IllegalStateException("the DynamoDB item " + item.get(KEY) + " is not a lock item: no " + name
                    + " (a string)");
        }
        return v.s();
    }

    private static long number(Map<String, AttributeValue> item, String name) {
        AttributeValue v = item.get(name);
        if (v == null || v.n() == null) {
            throw new IllegalStateException("the DynamoDB item " + item.get(KEY) + " is not a lock item: no " + name
                    + " (a number)");
        }
        return Long.parseLong(v.n());
    }

    private static Duration atLeastOneMilli(Duration d) {
        return d.toMillis() < 1 ? Duration.ofMillis(1) : d;
    }

    /** The client is the caller's: left open. */
    @Override
    public void close() {
    }
}
