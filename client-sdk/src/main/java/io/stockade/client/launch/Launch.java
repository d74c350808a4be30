package io.stockade.client.launch;

import java.lang.reflect.InvocationTargetException;

/**
 * The jar's {@code Main-Class} ({@code java -jar stockade-client-sdk.jar run ...}), compiled for Java 8 (a separate
 * compiler execution in this module's pom) so that any JVM from 8 on loads it: on Java 21 or newer it hands the
 * command line to {@code io.stockade.client.cli.LeaseCommand}; on an older one it says which Java it found and
 * where, and how to get a newer one, and exits with 1, where the JVM would otherwise print an
 * {@code UnsupportedClassVersionError} about class file versions. Java 8 code only. The proxy's jar has the same
 * class ({@code io.stockade.proxy.launch.Launch}): this module depends on nothing of Stockade's, so it keeps its own.
 */
public final class Launch {
    /** The oldest Java the SDK runs on (the project's {@code maven.compiler.release}). */
    static final int REQUIRED = 21;
    /**
     * The exit code on an older Java: {@code lease run}'s "command not started" (its own codes 75, 73, 69 and 2 say
     * other things, and any other code is the command's).
     */
    static final int EXIT_OLD_JAVA = 127;
    private static final String MAIN = "io.stockade.client.cli.LeaseCommand";

    private Launch() {
    }

    public static void main(String[] args) throws Throwable {
        String message = check(System.getProperty("java.specification.version"), System.getProperty("java.home"));
        if (message != null) {
            System.err.println(message);
            System.exit(EXIT_OLD_JAVA);
            return;
        }
        try {
            Class.forName(MAIN).getMethod("main", String[].class).invoke(null, (Object) args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    /**
     * What to say on this Java, or null when it is new enough. {@code specification}: the
     * {@code java.specification.version} ("1.8", "17", "21"), {@code home}: the {@code java.home}.
     */
    public static String check(String specification, String home) {
        int major = major(specification);
        if (major >= REQUIRED) {
            return null;
        }
        return "stockade: Stockade needs Java " + REQUIRED + "+: found " + (major > 0 ? major : specification)
                + " at " + home + "\n"
                + "          Run the jar with a Java " + REQUIRED + " or newer (e.g. apt-get install openjdk-"
                + REQUIRED + "-jre-headless, then its bin/java -jar ...), or use bin/stockade lease, which finds a"
                + " JDK " + REQUIRED + "+ under /usr/lib/jvm.";
    }

    /** The major version in a {@code java.specification.version}: 8 for "1.8", 17 for "17"; 0 if unreadable. */
    static int major(String specification) {
        if (specification == null) {
            return 0;
        }
        String s = specification.startsWith("1.") ? specification.substring(2) : specification;
        int end = 0;
        while (end < s.length() && Character.isDigit(s.charAt(end))) {
            end++;
        }
        try {
            return end == 0 ? 0 : Integer.parseInt(s.substring(0, end));
        } catch (NumberFormatException e) {
            return 0;
        }
    }
}
