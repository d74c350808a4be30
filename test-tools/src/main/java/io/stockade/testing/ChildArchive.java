package io.stockade.testing;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Stream;
import java.util.zip.CRC32;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;

/**
 * One class-data-sharing archive (AppCDS, dynamic) for the child JVMs of this test JVM: a child started with it
 * maps the classes a proxy's start loads instead of parsing and verifying them again, and starts on ~40 % less CPU
 * (the proxy on the quickstart policy, C1: 1.3-1.45 s of CPU to its readiness line without, 0.8-0.9 s with;
 * measured 2026-12-03). The test suite is CPU-bound and starts a few hundred children, so this is CI time.
 *
 * <p>Three rules the JVM sets, and how they are kept:
 * <ul>
 *   <li>An archive is refused (the JVM does not start) with a non-empty directory on the class path, and the test
 *       class path is mostly {@code target/classes} directories: {@link #classPath} puts each directory into a jar
 *       once per test JVM, in a temporary directory, and every child gets that class path, archived or not, so the
 *       archive always matches it.</li>
 *   <li>The archive is written by a JVM as it exits ({@code -XX:ArchiveClassesAtExit}), and a JVM reading a file
 *       another is writing is not something to rely on: one training child per test JVM writes it to a file of its
 *       own ({@link #train}); it is published (renamed to the name children read) only after that child exited on
 *       its own or on SIGTERM and the file starts with the dynamic archive's magic number. Until then children
 *       start without it.</li>
 *   <li>A child that cannot map the archive runs without it and says so on stdout, which tests read: children get
 *       {@code -Xlog:cds*=off}.</li>
 * </ul>
 * {@code -Dstockade.test.cds=false} turns it off (the class path as it is, no archive), to compare.
 */
final class ChildArchive {
    /** The dynamic archive's magic number, its first four bytes (little-endian on the machines this runs on). */
    private static final int DYNAMIC_MAGIC = 0xf00baba8;
    private static final boolean ENABLED = !"false".equals(System.getProperty("stockade.test.cds"));
    /** Trainings tried per test JVM before giving up (a training child may be killed, or fail to start). */
    private static final int TRAININGS = 2;

    private static final Object LOCK = new Object();
    private static String classPath;
    private static Path dir;
    private static Path archive;
    private static int trainings;
    private static boolean training;

    private ChildArchive() {
    }

    /**
     * The class path for a child: {@code original} with each directory replaced by a jar of it (made on the first
     * call); {@code original} itself when turned off or when the jars cannot be made.
     */
    static String classPath(String original) {
        synchronized (LOCK) {
            if (classPath == null) {
                classPath = ENABLED ? jarred(original) : original;
            }
            return classPath;
        }
    }

    /** The options that give a child the archive, once there is one; none before. */
    static List<String> options() {
        synchronized (LOCK) {
            return archive == null ? List.of()
                    : List.of("-Xshare:auto", "-XX:SharedArchiveFile=" + archive, "-Xlog:cds*=off");
        }
    }

    /**
     * Starts the training once per test JVM, in the background: {@code run} is given the options that make a child
     * write the archive as it exits, starts that child, ends it (on its own or with SIGTERM, never SIGKILL: a
     * killed JVM writes nothing) and returns it, ended. A training that leaves no archive is tried again at a later
     * call, {@value #TRAININGS} times in all. Does nothing while turned off or when the class path has no jars of
     * ours to match.
     */
    static void train(Function<List<String>, Process> run) {
        Path out;
        classPath(Jvm.classPath());
        synchronized (LOCK) {
            if (!ENABLED || archive != null || training || trainings >= TRAININGS || dir == null) {
                return;
            }
            training = true;
            trainings++;
            out = dir.resolve("training-" + trainings + ".jsa");
        }
        Thread.ofPlatform().daemon().name("child-archive-training").start(() -> {
            Path published = null;
            try {
                Process p = run.apply(List.of("-XX:ArchiveClassesAtExit=" + out, "-Xlog:cds*=off"));
                if (p != null && p.waitFor(60, TimeUnit.SECONDS) && Files.isRegularFile(out) && complete(out)) {
                    published = Files.move(out, dir.resolve("children.jsa"), StandardCopyOption.ATOMIC_MOVE);
                }
            } catch (IOException | RuntimeException e) {
                System.err.println("test-tools: no class-data archive for child JVMs (" + e + "); they start"
                        + " without one");
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                synchronized (LOCK) {
                    archive = published;
                    training = false;
                }
            }
        });
    }

    /** Whether {@code file} starts with the dynamic archive's magic number (the JVM writes its header last). */
    private static boolean complete(Path file) throws IOException {
        try (InputStream in = Files.newInputStream(file)) {
            byte[] head = in.readNBytes(4);
            return head.length == 4 && ByteBuffer.wrap(head).order(ByteOrder.nativeOrder()).getInt() == DYNAMIC_MAGIC;
        }
    }

    /** {@code original} with every directory in a jar of its own, in a temporary directory removed at exit. */
    private static String jarred(String original) {
        try {
            Path tmp = Files.createTempDirectory("stockade-children-");
            Runtime.getRuntime().addShutdownHook(new Thread(() -> delete(tmp)));
            List<String> entries = new ArrayList<>();
            int n = 0;
            for (String entry : original.split(File.pathSeparator, -1)) {
                Path p = entry.isEmpty() ? null : Path.of(entry);
                if (p != null && Files.isDirectory(p)) {
                    Path jar = tmp.resolve(n++ + "-" + p.getFileName() + ".jar");
                    jar(p, jar);
                    entries.add(jar.toString());
                } else {
                    entries.add(entry);
                }
            }
            dir = tmp;
            return String.join(File.pathSeparator, entries);
        } catch (IOException | RuntimeException e) {
            System.err.println("test-tools: children get the class path as it is, without a class-data archive ("
                    + e + ")");
            return original;
        }
    }

    /** A jar (stored, not compressed: read at every child's start) of everything under {@code root}. */
    private static void jar(Path root, Path jar) throws IOException {
        try (OutputStream file = Files.newOutputStream(jar); ZipOutputStream zip = new ZipOutputStream(file);
             Stream<Path> walk = Files.walk(root)) {
            zip.setMethod(ZipOutputStream.STORED);
            for (Path p : walk.sorted().toList()) {
                if (p.equals(root)) {
                    continue;
                }
                String name = root.relativize(p).toString().replace(File.separatorChar, '/');
                boolean isDir = Files.isDirectory(p);
                byte[] bytes = isDir ? new byte[0] : Files.readAllBytes(p);
                ZipEntry e = new ZipEntry(isDir ? name + "/" : name);
                CRC32 crc = new CRC32();
                crc.update(bytes);
                e.setSize(bytes.length);
                e.setCompressedSize(bytes.length);
                e.setCrc(crc.getValue());
                zip.putNextEntry(e);
                zip.write(bytes);
                zip.closeEntry();
            }
        }
    }

    /** Removes {@code tmp} and everything under it, as far as it can. */
    static void delete(Path tmp) {
        try (Stream<Path> walk = Files.walk(tmp)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            // a temporary directory left behind: nothing to report at exit
        }
    }
}
