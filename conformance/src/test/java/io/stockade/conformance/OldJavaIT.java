package io.stockade.conformance;

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
 * {@code java -jar conformance/target/stockade-conformance.jar} on a Java older than 21 says which Java it found and
 * what it needs, as the proxy's and the client SDK's jars do, instead of a raw {@code UnsupportedClassVersionError}
 * (issue 49, left by its round: the conformance jar); on this JVM the same jar runs the suite's command line.
 */
@RequiresTools(Tools.Tool.JAVA_BEFORE_21)
class OldJavaIT {
    private static final Path JAR = Path.of("target", "stockade-conformance.jar").toAbsolutePath();

    @TempDir
    Path dir;

    private JarRun run(String java, String... args) throws Exception {
        return JarRun.run(dir, java, JAR, args);
    }

    @Test
    void anOldJavaIsToldWhatItNeedsAndANewOneRunsTheSuite() throws Exception {
        assertTrue(Files.isRegularFile(JAR), "the jar is packaged before the integration tests: " + JAR);
        Path home = Jvm.olderThan21().orElseThrow();
        JarRun old = run(home.resolve("bin/java").toString(), "--help");
        assertEquals(1, old.code(), old.err());
        assertTrue(old.err().startsWith("stockade: Stockade needs Java 21+: found " + Jvm.major(home) + " at "
                + home.toRealPath()), old.err());
        assertTrue(old.err().contains("bin/stockade conformance"), old.err());
        assertFalse(old.err().contains("UnsupportedClassVersionError"), old.err());
        JarRun help = run(Jvm.binary(), "--help");
        assertFalse(help.err().contains("needs Java"), help.err());
        assertTrue((help.out() + help.err()).contains("conformance"), help.out() + help.err());
    }
}
