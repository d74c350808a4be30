package io.stockade.client;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.stockade.testing.Dynalite;
import io.stockade.testing.RequiresTools;
import io.stockade.testing.Tools;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code lease run --dynamodb} as a real process against dynalite: region and credentials from the AWS SDK's
 * environment variables, as the {@code aws} command reads them; the command gets the item's token, its exit code is
 * passed on and the item is released at the end; a lock taken over under it stops the command within a renew
 * interval (75); a missing region is a clear error (69).
 */
@RequiresTools(Tools.Tool.DYNALITE)
class DynamoDbLeaseRunIT {
    private static final String MAIN = "io.stockade.client.cli.LeaseCommand";
    private static Dynalite dynalite;
    private static DynamoDbClient db;

    @TempDir
    Path dir;

    @BeforeAll
    static void startDynalite() {
        dynalite = Dynalite.start();
        db = dynalite.client();
        DynamoDbLockTable.create(db, "run-locks");
    }

    @AfterAll
    static void stopDynalite() {
        if (db != null) {
            db.close();
        }
        if (dynalite != null) {
            dynalite.close();
        }
    }

    private Process run(String name, String ttl, String script, boolean region) throws Exception {
        ProcessBuilder b = Children.java(MAIN, "run", "--dynamodb", "run-locks", "--dynamodb-prefix", "jobs/",
                "--dynamodb-endpoint", dynalite.endpoint().toString(), "--name", name, "--ttl", ttl, "--grace", "2s",
                "--", "sh", "-c", script);
        b.environment().put("AWS_ACCESS_KEY_ID", Dynalite.ACCESS_KEY);
        b.environment().put("AWS_SECRET_ACCESS_KEY", Dynalite.SECRET_KEY);
        b.environment().remove("AWS_DEFAULT_REGION");
        b.environment().remove("AWS_PROFILE");
        b.environment().put("AWS_CONFIG_FILE", dir.resolve("no-aws-config").toString());
        if (region) {
            b.environment().put("AWS_REGION", Dynalite.REGION);
        } else {
            b.environment().remove("AWS_REGION");
        }
        return b.directory(dir.toFile()).redirectErrorStream(true).redirectOutput(dir.resolve("run.log").toFile())
                .start();
    }

    private Map<String, AttributeValue> item(String name) {
        return db.getItem(b -> b.tableName("run-locks").key(Map.of("key", AttributeValue.fromS("jobs/" + name)))
                .consistentRead(true)).item();
    }

    private void awaitFile(Path file, Process p) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!Files.exists(file) || Files.size(file) == 0) {
            if (!p.isAlive() || System.nanoTime() > deadline) {
                throw new AssertionError("the command did not start: " + Files.readString(dir.resolve("run.log")));
            }
            Thread.sleep(20);
        }
    }

    @Test
    void theCommandGetsTheItemsTokenAndItsExitCodeIsPassedOn() throws Exception {
        Process p = run("job-exit", "3s", "echo \"$FENCING_TOKEN\" > token; sleep 1; exit 3", true);
        awaitFile(dir.resolve("token"), p);
        long token = Long.parseLong(Files.readString(dir.resolve("token")).strip());
        assertEquals(item("job-exit").get("token").n(), Long.toString(token));
        assertEquals(false, item("job-exit").get("released").bool());
        assertTrue(p.waitFor(20, TimeUnit.SECONDS));
        assertEquals(3, p.exitValue(), Files.readString(dir.resolve("run.log")));
        assertEquals(true, item("job-exit").get("released").bool(), "released at the end");
    }

    @Test
    void aLockTakenOverStopsTheCommandWithinOneRenewInterval() throws Exception {
        Process p = run("job-term", "3s", "echo started > started; exec sleep 60", true);
        awaitFile(dir.resolve("started"), p);
        long taken = System.nanoTime();
        db.updateItem(b -> b.tableName("run-locks").key(Map.of("key", AttributeValue.fromS("jobs/job-term")))
                .updateExpression("SET rvn = :r ADD #t :one").expressionAttributeNames(Map.of("#t", "token"))
                .expressionAttributeValues(Map.of(":r", AttributeValue.fromS("an-operator"),
                        ":one", AttributeValue.fromN("1"))));
        assertTrue(p.waitFor(20, TimeUnit.SECONDS));
        Duration took = Duration.ofNanos(System.nanoTime() - taken);
        String log = Files.readString(dir.resolve("run.log"));
        assertEquals(75, p.exitValue(), log);
        assertTrue(took.compareTo(Duration.ofMillis(3000)) < 0, "stopped after " + took); // renew every 1 s
        assertTrue(log.contains("RENEWAL_REFUSED"), log);
    }

    @Test
    void noRegionIsAClearError() throws Exception {
        Process p = run("job-region", "3s", "echo ran > ran", false);
        assertTrue(p.waitFor(20, TimeUnit.SECONDS));
        String log = Files.readString(dir.resolve("run.log"));
        assertEquals(69, p.exitValue(), log);
        assertTrue(log.contains("AWS_REGION"), log);
        assertFalse(Files.exists(dir.resolve("ran")), "the command never ran");
    }
}
