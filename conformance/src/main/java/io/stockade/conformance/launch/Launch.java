package io.stockade.conformance.launch;

import java.lang.reflect.InvocationTargetException;

/**
 * The jar's {@code Main-Class} ({@code java -jar stockade-conformance.jar ...}), compiled for Java 8 (a separate
 * compiler execution in this module's pom) so that any JVM from 8 on loads it: on Java 21 or newer it hands the
 * command line to {@code io.stockade.conformance.Main}; on an older one it says which Java it found and where, and
 * exits with 1, where the JVM would print an {@code UnsupportedClassVersionError}. The check and its words are the
 * client SDK's launcher's (this module depends on the SDK; its launcher is Java 8 code too). Java 8 code only.
 */
public final class Launch {
    private static final String MAIN = "io.stockade.conformance.Main";

    private Launch() {
    }

    public static void main(String[] args) throws Throwable {
        String version = System.getProperty("java.specification.version");
        String message = io.stockade.client.launch.Launch.check(version, // inline name: this class is Launch too
                System.getProperty("java.home"));
        if (message != null) {
            System.err.println(message.replace("bin/stockade lease", "bin/stockade conformance"));
            System.exit(1);
            return;
        }
        try {
            Class.forName(MAIN).getMethod("main", String[].class).invoke(null, (Object) args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
