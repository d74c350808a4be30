package io.stockade.proxy.verify;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import io.stockade.testing.Dynalite;
import io.stockade.testing.RequiresTools;
import io.stockade.testing.Tools;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
import software.amazon.awssdk.services.dynamodb.model.ConditionalCheckFailedException;
import software.amazon.awssdk.services.dynamodb.model.DynamoDbException;
import software.amazon.awssdk.services.dynamodb.model.ReturnValue;
import software.amazon.awssdk.services.dynamodb.model.UpdateItemResponse;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Before trusting dynalite as the DynamoDB of the lock tests: do its conditional writes behave as DynamoDB documents
 * them? Racing writers with the lock recipe's own conditions (absent; record version unchanged) must see exactly one
 * success per round, the {@code ADD} counter must rise by one per success and come back in {@code ALL_NEW}, and a
 * strongly consistent read must see the winner. What dynalite does not do is written in {@code Dynalite}'s comment and
 * docs/locks-guide.md.
 */
@RequiresTools(Tools.Tool.DYNALITE)
class DynaliteConditionalWritesIT {
    private static final int RACERS = 16;
    private static Dynalite dynalite;
    private static DynamoDbClient db;
    private static String table;

    @BeforeAll
    static void start() {
        dynalite = Dynalite.start();
        table = dynalite.createLockTable("locks");
        db = dynalite.client();
    }

    @AfterAll
    static void stop() {
        if (db != null) {
            db.close();
        }
        if (dynalite != null) {
            dynalite.close();
        }
    }

    private static Map<String, AttributeValue> key(String k) {
        return Map.of("key", AttributeValue.fromS(k));
    }

    /** The recipe's acquisition: SET owner and a fresh rvn, ADD 1 to the token, on a condition. */
    private static UpdateItemResponse take(String k, String owner, String condition, String expectedRvn) {
        Map<String, AttributeValue> values = new HashMap<>(Map.of(
                ":owner", AttributeValue.fromS(owner),
                ":rvn", AttributeValue.fromS(UUID.randomUUID().toString()),
                ":one", AttributeValue.fromN("1")));
        if (expectedRvn != null) {
            values.put(":seen", AttributeValue.fromS(expectedRvn));
        }
        Map<String, String> names = new HashMap<>(Map.of("#owner", "owner", "#rvn", "rvn", "#token",
                "token"));
        if (condition.contains("#key")) {
            names.put("#key", "key"); // DynamoDB refuses a name the expressions do not use
        }
        return db.updateItem(b -> b.tableName(table).key(key(k))
                .updateExpression("SET #owner = :owner, #rvn = :rvn ADD #token :one")
                .conditionExpression(condition)
                .expressionAttributeNames(names)
                .expressionAttributeValues(values)
                .returnValues(ReturnValue.ALL_NEW));
    }

    /** Runs {@code RACERS} calls released together; returns how many succeeded and the winners' answers. */
    private static List<UpdateItemResponse> race(Callable<UpdateItemResponse> call) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(RACERS);
        try {
            CountDownLatch go = new CountDownLatch(1);
            List<Future<UpdateItemResponse>> all = new ArrayList<>();
            for (int i = 0; i < RACERS; i++) {
                all.add(pool.submit(() -> {
                    go.await();
                    try {
                        return call.call();
                    } catch (ConditionalCheckFailedException e) {
                        return null;
                    }
                }));
            }
            go.countDown();
            List<UpdateItemResponse> winners = new ArrayList<>();
            for (Future<UpdateItemResponse> f : all) {
                UpdateItemResponse r = f.get(30, TimeUnit.SECONDS);
                if (r != null) {
                    winners.add(r);
                }
            }
            return winners;
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void racingCreatorsOfAnAbsentItemHaveExactlyOneWinner() throws Exception {
        for (int round = 0; round < 10; round++) {
            String k = "absent-" + round;
            List<UpdateItemResponse> winners = race(() -> take(k, Thread.currentThread().getName(),
                    "attribute_not_exists(#key)", null));
            assertEquals(1, winners.size(), "round " + round + ": one creator wins");
            Map<String, AttributeValue> item = db.getItem(b -> b.tableName(table).key(key(k)).consistentRead(true))
                    .item();
            assertEquals("1", item.get("token").n(), "ADD on a missing attribute starts from 0");
            assertEquals(winners.getFirst().attributes().get("rvn"), item.get("rvn"),
                    "the consistent read sees the winner's write");
        }
    }

    @Test
    void racingTakersOfOneRecordVersionHaveExactlyOneWinnerAndTheCounterRisesByOne() throws Exception {
        String k = "expired";
        String rvn = take(k, "first", "attribute_not_exists(#key)", null).attributes().get("rvn").s();
        long token = 1;
        for (int round = 0; round < 10; round++) {
            String seen = rvn;
            List<UpdateItemResponse> winners = race(() -> take(k, Thread.currentThread().getName(), "#rvn = :seen",
                    seen));
            assertEquals(1, winners.size(), "round " + round + ": one taker of rvn " + seen + " wins");
            token++;
            assertEquals(Long.toString(token), winners.getFirst().attributes().get("token").n(),
                    "ALL_NEW answers the raised token");
            rvn = winners.getFirst().attributes().get("rvn").s();
            Map<String, AttributeValue> item = db.getItem(b -> b.tableName(table).key(key(k)).consistentRead(true))
                    .item();
            assertEquals(rvn, item.get("rvn").s());
            assertEquals(Long.toString(token), item.get("token").n());
        }
    }

    @Test
    void aFailedConditionChangesNothing() {
        String k = "kept";
        UpdateItemResponse first = take(k, "holder", "attribute_not_exists(#key)", null);
        assertThrows(ConditionalCheckFailedException.class,
                () -> take(k, "intruder", "#rvn = :seen", "not-the-record-version"));
        assertThrows(ConditionalCheckFailedException.class,
                () -> take(k, "intruder", "attribute_not_exists(#key)", null));
        assertThrows(ConditionalCheckFailedException.class,
                () -> take("missing", "intruder", "#rvn = :seen", "anything"));
        Map<String, AttributeValue> item = db.getItem(b -> b.tableName(table).key(key(k)).consistentRead(true))
                .item();
        assertEquals(first.attributes(), item, "the item is as the holder wrote it");
        assertTrue(db.getItem(b -> b.tableName(table).key(key("missing")).consistentRead(true)).item().isEmpty(),
                "a failed conditional update of a missing item creates nothing");
    }

    @Test
    void aPartitionKeyOver2048BytesIsRefusedAsDynamoDbDoes() {
        DynamoDbException e = assertThrows(DynamoDbException.class,
                () -> take("k".repeat(2049), "holder", "attribute_not_exists(#key)", null));
        assertEquals(400, e.statusCode());
        assertEquals("ValidationException", e.awsErrorDetails().errorCode());
    }
}
