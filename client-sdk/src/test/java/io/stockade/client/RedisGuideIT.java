package io.stockade.client;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.stockade.policy.TokenVerification;
import io.stockade.policy.yaml.PolicyLoader;
import io.stockade.testing.RedisServer;
import io.stockade.testing.RequiresTools;
import io.stockade.testing.Tools;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.params.SetParams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * docs/locks-guide.md, section 6 "A Redis lock done properly", run against a real redis-server: its three scripts are
 * the SDK's, the two mistakes it shows happen as it says, and its policy loads.
 */
@RequiresTools(Tools.Tool.REDIS)
class RedisGuideIT {

    private static final Path GUIDE = Path.of("..", "docs", "locks-guide.md");
    private static RedisServer redis;
    private static Jedis a;
    private static Jedis b;

    @BeforeAll
    static void start() {
        redis = RedisServer.start(RedisServer.options());
        a = new Jedis(redis.url());
        b = new Jedis(redis.url());
    }

    @AfterAll
    static void stop() {
        if (a != null) {
            a.close();
            b.close();
        }
        if (redis != null) {
            redis.close();
        }
    }

    /** The body of the guide's {@code lua} block whose first line starts with {@code -- name:}. */
    private static String luaBlock(String name) throws Exception {
        Matcher m = Pattern.compile("```lua\n-- " + name + ":[^\n]*\n(.*?)```", Pattern.DOTALL)
                .matcher(Files.readString(GUIDE));
        assertTrue(m.find(), "no lua block '-- " + name + ":' in " + GUIDE);
        return m.group(1);
    }

    @Test
    void theGuidesScriptsAreTheSdks() throws Exception {
        assertEquals(RedisLeaseService.ACQUIRE, luaBlock("acquire"));
        assertEquals(RedisLeaseService.RENEW, luaBlock("renew"));
        assertEquals(RedisLeaseService.RELEASE, luaBlock("release"));
    }

    private static void awaitGone(String key) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (a.exists(key)) {
            assertTrue(System.nanoTime() < deadline, key + " did not expire");
            Thread.sleep(10);
        }
    }

    @Test
    void aPlainDelDeletesTheNextHoldersLock() throws Exception {
        assertEquals("OK", a.set("guide/del", "a", SetParams.setParams().nx().px(100)));
        awaitGone("guide/del");                                     // A is paused; its lock expires
        assertEquals("OK", b.set("guide/del", "b", SetParams.setParams().nx().px(10_000)));
        assertEquals(1, a.del("guide/del"), "A's DEL deleted B's lock");
        assertEquals("OK", a.set("guide/del", "c", SetParams.setParams().nx().px(10_000)), "a third holder gets in");

        // the guide's release compares first: A's late release leaves the current holder's lock alone
        a.set("guide/del", "b", SetParams.setParams().px(10_000));
        assertEquals(0L, a.eval(luaBlock("release"), List.of("guide/del"), List.of("a")));
        assertEquals("b", b.get("guide/del"));
    }

    @Test
    void aConstantValueLetsTheOldHolderDeleteTheNewHoldersLock() throws Exception {
        String release = luaBlock("release");
        assertEquals("OK", a.set("guide/const", "locked", SetParams.setParams().nx().px(100)));
        awaitGone("guide/const");
        assertEquals("OK", b.set("guide/const", "locked", SetParams.setParams().nx().px(10_000)));
        assertEquals(1L, a.eval(release, List.of("guide/const"), List.of("locked")),
                "the compare matched: the value says nothing about whose lock it is");
        assertNull(b.get("guide/const"));
    }

    @Test
    void theGuidesPolicyLoads() throws Exception {
        Matcher m = Pattern.compile("```yaml\n(policies:\n.*?kind: redis.*?)```", Pattern.DOTALL)
                .matcher(Files.readString(GUIDE));
        assertTrue(m.find(), "no policy with kind: redis in " + GUIDE);
        var config = PolicyLoader.parse("store: {type: memory, journal: /tmp/j}\n" + m.group(1),
                GUIDE, Map.of());
        TokenVerification.Redis verify = assertInstanceOf(TokenVerification.Redis.class,
                config.policies().get(0).fence().verify());
        assertEquals("redis://redis:6379", verify.url().toString());
    }
}
