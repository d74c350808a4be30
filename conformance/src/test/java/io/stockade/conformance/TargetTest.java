package io.stockade.conformance;

import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TargetTest {

    @Test
    void aFullTargetIsRead() {
        Target t = Target.parse("""
                name: pg
                proxy: {url: "http://127.0.0.1:8080/", path: "/docs/{key}"}
                read: {jdbc: "jdbc:postgresql://127.0.0.1/app", user: app, sql: "select body from docs where id = ?"}
                control: {url: "http://127.0.0.1:9000", path: "/{key}"}
                lease: {ttl: 2s}
                writers: 3
                """, "t.yaml");
        assertEquals("http://127.0.0.1:8080", t.proxyUrl());
        assertEquals(Duration.ofSeconds(2), t.ttl());
        assertEquals(3, t.writers());
        assertTrue(t.reader().describe().startsWith("jdbc "));
    }

    @Test
    void mistakesAreNamed() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Target.parse("proxy: {url: x}\nread: {directory: /d}\nwritter: 2\n", "t.yaml"));
        assertTrue(e.getMessage().contains("unknown key 'writter'"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Target.parse("proxy: {path: /x}\nread: {directory: /d}\n",
                "t.yaml"));
        assertThrows(IllegalArgumentException.class, () -> Target.parse("proxy: {url: x}\nread: {s3: b}\n", "t.yaml"));
        assertThrows(IllegalArgumentException.class, () -> Scenario.parse("nap"));
        assertEquals(Scenario.LOST_RESPONSE, Scenario.parse("lost_response"));
    }

    @Test
    void badArgumentsExitWith2() {
        assertEquals(2, Main.run(new String[] {"--nope"}));
        assertEquals(2, Main.run(new String[0]));
    }
}
