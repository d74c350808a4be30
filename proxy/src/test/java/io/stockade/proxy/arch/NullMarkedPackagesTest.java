package io.stockade.proxy.arch;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * NullAway checks only {@code @NullMarked} packages (the root pom's gates profile), so a package without the mark
 * would leave the gate silently. Every package of main code in every module of the build carries it in its
 * package-info.java, but the Java 8 launchers (compiled without Error Prone, README "Static analysis").
 */
class NullMarkedPackagesTest {
    /** Compiled for Java 8 without Error Prone: they say "needs Java 21+" on an old Java. */
    private static final Set<String> UNMARKED = Set.of(
            "io.stockade.proxy.launch", "io.stockade.client.launch", "io.stockade.conformance.launch");
    private static final Pattern MODULE = Pattern.compile("<module>([^<]+)</module>");

    @Test
    void everyPackageOfMainCodeIsNullMarked() throws IOException {
        Path root = Path.of("..").toAbsolutePath().normalize();
        List<String> modules = modules(root);
        assertFalse(modules.isEmpty(), "no <module> in " + root.resolve("pom.xml"));
        List<String> unmarked = modules.stream()
                .map(m -> root.resolve(m).resolve("src/main/java"))
                .filter(Files::isDirectory)
                .flatMap(NullMarkedPackagesTest::packageDirectories)
                .filter(dir -> !marked(dir))
                .map(dir -> root.relativize(dir).toString())
                .filter(dir -> UNMARKED.stream().noneMatch(p -> dir.endsWith(p.replace('.', '/'))))
                .sorted()
                .toList();
        assertEquals(List.of(), unmarked, "packages without @NullMarked in their package-info.java");
    }

    private static List<String> modules(Path root) throws IOException {
        Matcher m = MODULE.matcher(Files.readString(root.resolve("pom.xml")));
        return m.results().map(r -> r.group(1).trim()).toList();
    }

    /** The directories under a source root that hold a .java file. */
    private static Stream<Path> packageDirectories(Path sources) {
        try (Stream<Path> all = Files.walk(sources)) {
            return all.filter(Files::isDirectory).filter(NullMarkedPackagesTest::holdsJava).toList().stream();
        } catch (IOException e) {
            throw new IllegalStateException("cannot list " + sources, e);
        }
    }

    private static boolean holdsJava(Path dir) {
        try (Stream<Path> files = Files.list(dir)) {
            return files.anyMatch(f -> f.getFileName().toString().endsWith(".java"));
        } catch (IOException e) {
            throw new IllegalStateException("cannot list " + dir, e);
        }
    }

    private static boolean marked(Path dir) {
        Path info = dir.resolve("package-info.java");
        try {
            return Files.isRegularFile(info) && Files.readString(info).contains("\n@NullMarked\n");
        } catch (IOException e) {
            throw new IllegalStateException("cannot read " + info, e);
        }
    }
}
