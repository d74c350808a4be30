package io.stockade.proxy;

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
 * The README's {@code java -jar proxy/target/stockade-proxy.jar} on a Java older than 21 (Debian's JDK 17 under
 * /usr/lib/jvm): the jar's own Main-Class, compiled for Java 8, says which Java it found and where, and exits with 1,
 * where the JVM used to print {@code UnsupportedClassVersionError}; on this JVM (21+) the same jar runs the proxy's
 * command line. Runs after the jar is packaged (failsafe, integration-test phase).
 */
@RequiresTools(Tools.Tool.JAVA_BEFORE_21)
class OldJavaIT {
    private static final Path JAR = Path.of("target", "stockade-proxy.jar").toAbsolutePath();

    @TempDir
    Path dir;

    private JarRun run(String java, String... args) throws Exception {
        return JarRun.run(dir, java, JAR, args);
    }

    @Test
    void anOldJavaIsToldWhatItNeedsAndWhatItFound() throws Exception {
        assertTrue(Files.isRegularFile(JAR), "the jar is packaged before the integration tests: " + JAR);
        Path home = Jvm.olderThan21().orElseThrow();
        int major = Jvm.major(home);
        JarRun old = run(home.resolve("bin/java").toString(), "--config", "whatever.yaml");
        assertEquals(1, old.code(), old.err());
        assertEquals("", old.out());
        assertTrue(old.err().startsWith("stockade: Stockade needs Java 21+: found " + major + " at "
                + home.toRealPath()), old.err());
        assertTrue(old.err().contains("openjdk-21-jre-headless") && old.err().contains("bin/stockade"), old.err());
        assertFalse(old.err().contains("UnsupportedClassVersionError"), old.err());
    }

    @Test
    void onJava21OrNewerTheSameJarRunsTheProxysCommandLine() throws Exception {
        JarRun help = run(Jvm.binary(), "--help");
        assertEquals(0, help.code(), help.err());
        assertTrue(help.out().startsWith("usage: stockade-proxy --config FILE"), help.out());
        JarRun bad = run(Jvm.binary(), "--frobnicate");
        assertEquals(Main.EXIT_USAGE, bad.code(), "Main's own exit codes come through: " + bad.err());
    }
}
