package io.stockade.client;

import java.nio.file.Files;
import java.nio.file.Path;

import io.stockade.testing.JarRun;
import io.stockade.testing.Jvm;
import io.stockade.testing.RequiresTools;
import io.stockade.testing.Tools;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code java -jar client-sdk/target/stockade-client-sdk.jar run ...} on a Java older than 21 (issue 49: Debian's JDK
 * 17, the machine's default {@code java}, printed a raw {@code UnsupportedClassVersionError}): the jar's own
 * Main-Class, compiled for Java 8, says which Java it found and where and exits with 127 (the command was not
 * started), as the proxy's jar does; on this JVM (21+) the same jar runs the lease command. Runs after the jar is
 * packaged (failsafe, integration-test phase).
 */
@RequiresTools(Tools.Tool.JAVA_BEFORE_21)
class OldJavaIT {
    private static final Path JAR = Path.of("target", "stockade-client-sdk.jar").toAbsolutePath();

    @TempDir
    Path dir;

    private JarRun run(String java, String... args) throws Exception {
        return JarRun.run(dir, java, JAR, args);
    }

    @Test
    void anOldJavaIsToldWhatItNeedsAndWhatItFoundAndNothingRuns() throws Exception {
        assertTrue(Files.isRegularFile(JAR), "the jar is packaged before the integration tests: " + JAR);
        Path home = Jvm.olderThan21().orElseThrow();
        int major = Jvm.major(home);
        Path marker = dir.resolve("ran");
        JarRun old = run(home.resolve("bin/java").toString(), "run", "--etcd", "http://127.0.0.1:1", "--name",
                "reports", "--ttl", "15s", "--", "touch", marker.toString());
        assertEquals(127, old.code(), old.err());
        assertEquals("", old.out());
        assertTrue(old.err().startsWith("stockade: Stockade needs Java 21+: found " + major + " at "
                + home.toRealPath()), old.err());
        assertTrue(old.err().contains("openjdk-21-jre-headless") && old.err().contains("bin/stockade lease"),
                old.err());
        assertFalse(old.err().contains("UnsupportedClassVersionError"), old.err());
        assertFalse(Files.exists(marker), "the command was not started");
    }

    @Test
    void onJava21OrNewerTheSameJarRunsTheLeaseCommand() throws Exception {
        JarRun help = run(Jvm.binary(), "run", "--help");
        assertEquals(0, help.code(), help.err());
        assertTrue(help.out().contains("--etcd"), help.out());
        JarRun bad = run(Jvm.binary(), "frobnicate");
        assertEquals(2, bad.code(), "the lease command's own exit codes come through: " + bad.err());
    }
}
